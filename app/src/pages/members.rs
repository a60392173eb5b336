//! The Account page's members: who is in the account and in what role,
//! and (for owners) invitations, role changes and removals.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::members::{
    members, CancelInvitation, ChangeRole, InviteMember, RemoveMember, SetMemberCaps,
    SetMemberPriority,
};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{Me, Member, Quota, QuotaForm, Role};

/// A `<select name="role">` with `current` chosen.
fn role_picker(current: Role) -> impl IntoView {
    view! {
        <select name="role" aria-label="Role">
            {Role::ALL
                .into_iter()
                .map(|r| view! { <option value=r.as_str() selected=r == current>{r.as_str()}</option> })
                .collect_view()}
        </select>
    }
}

/// A member's caps in words ("no cap" when there are none).
fn caps_text(caps: &Quota) -> String {
    if *caps == Quota::default() {
        "no cap".to_owned()
    } else {
        QuotaForm::of(caps).words()
    }
}

/// The owner's form for one member's caps, behind a second click.
fn caps_form(action: ServerAction<SetMemberCaps>, user_id: i64, caps: &Quota) -> impl IntoView {
    let form = QuotaForm::of(caps);
    let field = move |name: &'static str, label: &'static str, value: String| {
        let id = format!("caps-{user_id}-{name}");
        view! {
            <label for=id.clone()>{label}</label>
            <input id=id name=format!("caps[{name}]") value=value placeholder="no cap" size="6" />
        }
    };
    view! {
        <details class="confirm">
            <summary class="small">"Set caps…"</summary>
            <ActionForm action attr:class="inline" attr:data-testid="caps-form">
                <input type="hidden" name="user_id" value=user_id />
                {field("cpu", "CPU", form.cpu)}
                {field("memory", "Memory", form.memory)}
                {field("gpu", "GPU", form.gpu)}
                {field("max_jobs", "Jobs", form.max_jobs)}
                <button type="submit" class="small">"Save caps"</button>
            </ActionForm>
        </details>
    }
}

/// Whether a member may submit high-priority jobs, and (for an owner
/// looking at a member who is not one) the button that changes it.
fn priority_cell(
    action: ServerAction<SetMemberPriority>,
    m: &Member,
    owner_looks: bool,
) -> impl IntoView {
    let (text, change) = match (m.role == Role::Owner, m.high_priority) {
        (true, _) => ("yes (an owner)", None),
        (false, true) => ("yes", Some(("Stop high priority", false))),
        (false, false) => ("no", Some(("Allow high priority", true))),
    };
    let user_id = m.user_id;
    let button = change.filter(|_| owner_looks).map(move |(label, allow)| {
        view! {
            <ActionForm action attr:class="inline" attr:data-testid="priority-form">
                <input type="hidden" name="user_id" value=user_id />
                {allow.then(|| view! { <input type="hidden" name="high" value="on" /> })}
                <button type="submit" class="small">{label}</button>
            </ActionForm>
        }
    });
    view! { <span data-testid="member-high-priority">{text}</span> {button} }
}

/// Members, invitations, and what owners do with them.
#[component]
pub fn MembersSection(
    /// The signed-in user.
    me: Me,
) -> impl IntoView {
    let invite = ServerAction::<InviteMember>::new();
    let cancel = ServerAction::<CancelInvitation>::new();
    let change = ServerAction::<ChangeRole>::new();
    let remove = ServerAction::<RemoveMember>::new();
    let caps = ServerAction::<SetMemberCaps>::new();
    let priority = ServerAction::<SetMemberPriority>::new();
    let invite_error = Signal::derive(last_error(invite));
    let error = Signal::derive(move || {
        last_error(change)()
            .or_else(last_error(remove))
            .or_else(last_error(caps))
            .or_else(last_error(priority))
            .or_else(last_error(cancel))
    });
    let list = resource(|| (), |_| members());
    let query = use_query_map();
    let invited = move || query.read().get("invited");
    let owner = me.role == Role::Owner;
    let row = move |m: Member| {
        let myself = m.user_id == me.user_id;
        let email = m.email.clone();
        let caps_cell = owner.then(|| caps_form(caps, m.user_id, &m.caps));
        let priority_cell = priority_cell(priority, &m, owner);
        let manage = (owner && !myself).then(move || {
            view! {
                <ActionForm action=change attr:class="inline">
                    <input type="hidden" name="user_id" value=m.user_id />
                    {role_picker(m.role)}
                    <button type="submit" class="small">"Change role"</button>
                </ActionForm>
                <details class="confirm">
                    <summary class="danger small">"Remove…"</summary>
                    <ActionForm action=remove attr:class="inline">
                        <input type="hidden" name="user_id" value=m.user_id />
                        <button type="submit" class="danger small" data-testid="remove-member">
                            {format!("Remove {email}")}
                        </button>
                    </ActionForm>
                </details>
            }
        });
        let leave = myself.then(|| {
            view! {
                <details class="confirm">
                    <summary class="small">"Leave…"</summary>
                    <ActionForm action=remove attr:class="inline">
                        <input type="hidden" name="user_id" value=m.user_id />
                        <button type="submit" class="danger small">"Leave this account"</button>
                    </ActionForm>
                </details>
            }
        });
        view! {
            <tr data-testid="member">
                <td>{m.email.clone()}</td>
                <td data-testid="member-role">{m.role.as_str()}</td>
                <td>{format_utc(m.created_at)}</td>
                <td data-testid="member-caps">{caps_text(&m.caps)} {caps_cell}</td>
                <td>{priority_cell}</td>
                <td class="actions">{manage}{leave}</td>
            </tr>
        }
    };
    view! {
        <h2 id="members">"Members"</h2>
        <p class="hint">
            "Owners manage members, roles and settings; members submit and stop jobs and use datasets and models; viewers see everything and change nothing. A member's caps bound what their own jobs and serving instances hold at once, inside the account's quota; owners, and the members they allow, may submit high-priority jobs (taken before the account's other waiting work)."
        </p>
        <FormError error />
        <FieldError error field="member" />
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                list.await
                    .map(|list| {
                        let invitations = (!list.invitations.is_empty())
                            .then(|| {
                                view! {
                                    <h3>"Invitations not yet accepted"</h3>
                                    <table class="grid" data-testid="invitations">
                                        <thead>
                                            <tr>
                                                <th>"Email"</th>
                                                <th>"Role"</th>
                                                <th>"Invited by"</th>
                                                <th>"Expires"</th>
                                                <th></th>
                                            </tr>
                                        </thead>
                                        <tbody>
                                            {list
                                                .invitations
                                                .into_iter()
                                                .map(|i| {
                                                    view! {
                                                        <tr>
                                                            <td>{i.email}</td>
                                                            <td>{i.role.as_str()}</td>
                                                            <td>{i.invited_by}</td>
                                                            <td>{format_utc(i.expires_at)}</td>
                                                            <td>
                                                                <ActionForm action=cancel>
                                                                    <input type="hidden" name="id" value=i.id />
                                                                    <button type="submit" class="small">"Withdraw"</button>
                                                                </ActionForm>
                                                            </td>
                                                        </tr>
                                                    }
                                                })
                                                .collect_view()}
                                        </tbody>
                                    </table>
                                }
                            });
                        view! {
                            <table class="grid" data-testid="members">
                                <thead>
                                    <tr>
                                        <th>"Email"</th>
                                        <th>"Role"</th>
                                        <th>"Joined"</th>
                                        <th>"Caps"</th>
                                        <th>"High priority"</th>
                                        <th></th>
                                    </tr>
                                </thead>
                                <tbody>{list.members.into_iter().map(row).collect_view()}</tbody>
                            </table>
                            {invitations}
                        }
                    })
            })}
        </Suspense>
        {owner
            .then(|| {
                view! {
                    <h3>"Invite someone"</h3>
                    {move || invited().map(|email| view! {
                        <p class="banner" role="status" data-testid="invite-notice">
                            {format!("Invitation sent to {email}. The link works once, for 7 days.")}
                        </p>
                    })}
                    <ActionForm action=invite attr:class="inline" attr:data-testid="invite-form">
                        <FormError error=invite_error />
                        <label for="invite-email">"Email"</label>
                        <input id="invite-email" name="email" type="email" required />
                        <label for="invite-role">"Role"</label>
                        <span id="invite-role">{role_picker(Role::Member)}</span>
                        <button type="submit" class="primary">"Send invitation"</button>
                        <FieldError error=invite_error field="email" />
                        <FieldError error=invite_error field="role" />
                    </ActionForm>
                }
            })}
    }
}
