//! `/secrets`: the account's secrets. Everyone in the account sees their
//! names, what they are for, when they were set and last used; owners set
//! (or replace) and delete them. A value is written once and never shown
//! again, here or anywhere. Works without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::secrets::{read_secrets, DeleteSecret, SetSecret};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::time::format_utc_seconds;
use crate::models::{SecretInfo, MAX_SECRET_BYTES, SECRETS_DIR_VARIABLE};

/// The Secrets page.
#[component]
pub fn SecretsPage() -> impl IntoView {
    let page = resource(|| (), |_| read_secrets());
    let just_set = move || use_query_map().read().get("set").filter(|s| !s.is_empty());
    view! {
        <Title text="Secrets" />
        <div class="page-head">
            <h1>"Secrets"</h1>
            <nav class="page-links"><a href="/account">"Account"</a><a href="/account/audit?action=secret.used">"Where they were used"</a></nav>
        </div>
        <p class="hint">
            "A secret is a value a job, a notebook or a serving instance needs but its spec must not hold: a storage key, a token, a credentials file. "
            "Owners set it here; a spec names it in its Secrets field, one per line: "
            <code>"AWS_SECRET_ACCESS_KEY=s3-key"</code> " gives the value as a variable, "
            <code>"file:gcp.json=gcp-creds"</code> " as a file in the folder "
            <code>{format!("${SECRETS_DIR_VARIABLE}")}</code> ". "
            "Values are sealed in the database, never shown again, and written as *** in logs."
        </p>
        {move || just_set().map(|name| view! {
            <p class="banner ok" role="status" data-testid="secret-set">
                {format!("Secret “{name}” set. Its value is not shown again.")}
            </p>
        })}
        <Transition fallback=|| view! { <p class="loading">"Loading secrets…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok((secrets, owner)) => view! {
                        <SecretList secrets owner />
                        {if owner {
                            view! { <SetSecretForm /> }.into_any()
                        } else {
                            view! { <p class="hint" data-testid="owners-only">"Only the account's owners set and delete secrets; you can use them by name."</p> }.into_any()
                        }}
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn SecretList(secrets: Vec<SecretInfo>, owner: bool) -> impl IntoView {
    let delete = ServerAction::<DeleteSecret>::new();
    let error = Signal::derive(last_error(delete));
    if secrets.is_empty() {
        return view! { <p class="empty" data-testid="no-secrets">"No secret yet."</p> }.into_any();
    }
    view! {
        <section class="panel" aria-labelledby="secret-list">
            <h2 id="secret-list">"The account's secrets"</h2>
            <FormError error />
            <table class="grid" data-testid="secrets">
                <thead><tr><th>"Name"</th><th>"For"</th><th>"Size"</th><th>"Set (UTC)"</th><th>"Last used (UTC)"</th><th></th></tr></thead>
                <tbody>
                    {secrets.into_iter().map(|s| {
                        let name = s.name.clone();
                        let used = s.last_used_at.map(format_utc_seconds).unwrap_or_else(|| "never".to_owned());
                        view! {
                            <tr data-secret=s.name.clone()>
                                <td class="name">{s.name.clone()}</td>
                                <td>{s.description.clone()}</td>
                                <td>{format!("{} B", s.size)}</td>
                                <td>{format!("{} · {}", format_utc_seconds(s.updated_at), s.updated_by)}</td>
                                <td data-testid="secret-last-used">{used}</td>
                                <td>
                                    {owner.then(|| view! {
                                        <ActionForm action=delete attr:class="inline">
                                            <input type="hidden" name="name" value=name.clone() />
                                            <button type="submit" class="small danger" data-testid="delete-secret">"Delete"</button>
                                        </ActionForm>
                                    })}
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
    .into_any()
}

/// The "Set a secret" form: a new one, or a new value for a name that exists.
#[component]
fn SetSecretForm() -> impl IntoView {
    let action = ServerAction::<SetSecret>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <section class="panel" aria-labelledby="set-secret">
            <h2 id="set-secret">"Set a secret"</h2>
            <p class="hint">"Setting a name that exists replaces its value. Paste a file's text (a JSON key, a PEM certificate) as the value; a file that is not text goes through the API or the CLI in base64."</p>
            <ActionForm action attr:data-testid="set-secret-form" attr:autocomplete="off">
                <FormError error />
                <div class="form-grid">
                    <label for="secret-name">"Name"</label>
                    <input id="secret-name" name="form[name]" required placeholder="s3-key" pattern="[a-z](-*[a-z0-9])*" />
                    <FieldError error field="name" />
                    <label for="secret-value">"Value"</label>
                    <textarea id="secret-value" name="form[value]" rows="3" required spellcheck="false" autocomplete="off" maxlength=MAX_SECRET_BYTES.to_string()></textarea>
                    <FieldError error field="value" />
                    <label for="secret-description">"What it is for"</label>
                    <input id="secret-description" name="form[description]" maxlength="200" placeholder="Read access to s3://acme-data" />
                    <FieldError error field="description" />
                </div>
                <footer><button type="submit" class="primary" data-testid="save-secret">"Save secret"</button></footer>
            </ActionForm>
        </section>
    }
}
