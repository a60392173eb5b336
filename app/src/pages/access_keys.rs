//! The Account page's access keys: create one (its secret shown once, with
//! the credentials file the CLI and the SDK read), list them with when they
//! were last used, revoke them.
//!
//! Creating works without JavaScript too: the form then posts to
//! `/account/keys`, which answers with `credentials.json` as a download.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::access_keys::{access_keys, CreateAccessKey, RevokeAccessKey};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::live::{beside_regions, Region};
use crate::components::resource::resource;
use crate::error::AppError;
use crate::models::time::format_utc;
use crate::models::{KeyScope, CREDENTIALS_FILE, MAX_KEY_NAME_LEN};

/// Query parameter the no-JavaScript create route reports a refused name in.
pub const KEY_ERROR_PARAM: &str = "key_error";

/// The live region of the keys' table, refreshed after a key is made.
const KEYS_REGION: &str = "access-keys-list";

/// The access keys section.
#[component]
pub fn AccessKeys() -> impl IntoView {
    let revoke = ServerAction::<RevokeAccessKey>::new();
    let keys = resource(move || revoke.version().get(), |_| access_keys());
    let params = use_query_map();
    let revoke_error = Signal::derive(last_error(revoke));
    let refused = params.with_untracked(|p| p.get(KEY_ERROR_PARAM));
    let heading = beside_regions(move || {
        view! {
        <h2 id="keys">"Access keys"</h2>
        <p class="hint">
            "For the " <code>"paddlecloud"</code> " command line, the Python SDK and scripts ("
            <code>"Authorization: Bearer <key>"</code>
            "). Creating a key downloads " <code>{CREDENTIALS_FILE}</code>
            ": save it as " <code>"~/.config/paddlecloud/credentials.json"</code>
            ". The key is shown only once; revoke it here if it leaks. Give a script the \
             narrowest scope that does its work, and a key an end date."
        </p>
        <CreateKey refused />
        <FormError error=revoke_error />
        }
    });
    view! {
        {heading}
        <Region id=KEYS_REGION>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                keys.await
                    .map(|rows| {
                        if rows.is_empty() {
                            return view! { <p class="empty">"No access keys yet."</p> }
                                .into_any();
                        }
                        view! {
                            <table class="grid" data-testid="access-keys">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Key"</th>
                                        <th>"May"</th>
                                        <th>"Created"</th>
                                        <th>"Last used"</th>
                                        <th>"Expires"</th>
                                        <th></th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows
                                        .into_iter()
                                        .map(|k| {
                                            let expired = k.expired;
                                            let expires = match k.expires_at {
                                                Some(at) => format_utc(at),
                                                None => "never".to_owned(),
                                            };
                                            view! {
                                                <tr data-scope=k.scope.as_str()>
                                                    <td>{k.name}</td>
                                                    <td>
                                                        <code>{format!("{}…", k.prefix)}</code>
                                                    </td>
                                                    <td data-testid="key-scope">{k.scope.label()}</td>
                                                    <td>{format_utc(k.created_at)}</td>
                                                    <td data-testid="key-last-used">
                                                        {k.last_used_at.map_or_else(|| "never".to_owned(), format_utc)}
                                                    </td>
                                                    <td data-testid="key-expires">
                                                        {expires}
                                                        {expired.then(|| view! { " " <span class="status failed">"expired"</span> })}
                                                    </td>
                                                    <td>
                                                        <ActionForm action=revoke>
                                                            <input type="hidden" name="id" value=k.id />
                                                            <button type="submit" class="danger small">
                                                                "Revoke"
                                                            </button>
                                                        </ActionForm>
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        }
                            .into_any()
                    })
            })}
        </Transition>
        </Region>
    }
}

/// The create form: with JavaScript the new key is shown here once, with its
/// credentials file as a link; without, the form posts to `/account/keys`,
/// which answers with the file.
#[island]
fn CreateKey(
    /// A name the no-JavaScript route refused, and why.
    refused: Option<String>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let create = ServerAction::<CreateAccessKey>::new();
    let created_error = last_error(create);
    let error = Signal::derive(move || {
        created_error().or_else(|| {
            refused
                .clone()
                .map(|message| AppError::invalid("name", message))
        })
    });
    let name = RwSignal::new(String::new());
    let scope = RwSignal::new(KeyScope::Full.as_str().to_owned());
    let days = RwSignal::new(String::new());
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        create.dispatch(CreateAccessKey {
            name: name.get_untracked(),
            scope: scope.get_untracked(),
            expires_in_days: days.get_untracked(),
        });
    };
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if create.value().with(|v| matches!(v, Some(Ok(_)))) {
            crate::components::live::refresh_now(&[KEYS_REGION]);
        }
    });
    view! {
        <form method="post" action="/account/keys" class="inline-form" on:submit=on_submit>
            <label for="key-name">"Key name"</label>
            <input
                id="key-name"
                name="name"
                placeholder="laptop"
                maxlength=MAX_KEY_NAME_LEN
                prop:value=move || name.get()
                on:input=move |ev| name.set(event_target_value(&ev))
            />
            <label for="key-scope">"May"</label>
            <select id="key-scope" name="scope" on:change=move |ev| scope.set(event_target_value(&ev))>
                {KeyScope::ALL.into_iter().map(|s| view! {
                    <option value=s.as_str() selected=s == KeyScope::Full>{s.label()}</option>
                }).collect_view()}
            </select>
            <label for="key-expires">"Expires"</label>
            <select id="key-expires" name="expires_in_days" on:change=move |ev| days.set(event_target_value(&ev))>
                <option value="" selected=true>"never"</option>
                <option value="7">"in 7 days"</option>
                <option value="30">"in 30 days"</option>
                <option value="90">"in 90 days"</option>
                <option value="365">"in a year"</option>
            </select>
            <button type="submit" disabled=move || create.pending().get()>
                "Create key"
            </button>
            <FieldError error field="name" />
            <FieldError error field="scope" />
            <FieldError error field="expires_in_days" />
        </form>
        {move || {
            create
                .value()
                .get()
                .and_then(Result::ok)
                .map(|credentials| {
                    view! {
                        <div class="banner ok new-key" data-testid="new-key" role="status">
                            <p>"Key created. Copy it now: it is not shown again."</p>
                            <code class="secret">{credentials.key.clone()}</code>
                            <p>
                                <a class="button" href=credentials.data_url() download=CREDENTIALS_FILE>
                                    "Download " {CREDENTIALS_FILE}
                                </a>
                            </p>
                        </div>
                    }
                })
        }}
    }
}
