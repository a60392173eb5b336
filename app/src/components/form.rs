//! Form helpers: errors shown next to the field they are about.

use leptos::prelude::*;

use crate::error::AppError;

/// The error of the last submission, if it failed.
pub fn last_error<A, S>(action: ServerAction<A>) -> impl Fn() -> Option<AppError> + Copy
where
    A: leptos::server_fn::ServerFn<Output = S, Error = AppError> + Clone + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    move || action.value().get().and_then(Result::err)
}

/// Whether an error about `reported` (`requirements[1]`, `job.num_trainers`)
/// belongs under the input named `field` (`requirements`, `job`).
fn is_about(reported: &str, field: &str) -> bool {
    reported
        .strip_prefix(field)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('[') || rest.starts_with('.'))
}

/// The message for `field` (or a part of it: an item of a list, a key of
/// an object), shown under its input.
#[component]
pub fn FieldError(
    /// The error to show, if it is about this field.
    error: Signal<Option<AppError>>,
    /// The input's `name`.
    #[prop(into)]
    field: String,
) -> impl IntoView {
    move || {
        let field = field.clone();
        error
            .get()
            .filter(|e| e.field().is_some_and(|f| is_about(f, &field)))
            .map(|e| {
                view! {
                    <p class="field-error" id=format!("{field}-error") role="alert">
                        {e.to_string()}
                    </p>
                }
            })
    }
}

/// A banner for errors that are not about one field.
#[component]
pub fn FormError(
    /// The error to show, if it is about no field.
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    move || {
        error.get().filter(|e| e.field().is_none()).map(|e| {
            view! {
                <p class="banner error" role="alert">
                    {e.to_string()}
                </p>
            }
        })
    }
}

/// A password input with a Show/Hide button (the button needs JavaScript).
#[island]
pub fn PasswordInput(
    /// `autocomplete` hint: `current-password` or `new-password`.
    #[prop(into)]
    autocomplete: String,
    /// The input's `name` and `id` (`password` unless a form has two).
    #[prop(optional, into)]
    name: Option<String>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let (shown, set_shown) = signal(false);
    let name = name.unwrap_or_else(|| "password".to_owned());
    view! {
        <span class="password">
            <input
                id=name.clone()
                name=name.clone()
                type=move || if shown.get() { "text" } else { "password" }
                autocomplete=autocomplete
                required
            />
            <button
                type="button"
                class="reveal"
                aria-controls=name
                aria-pressed=move || shown.get().to_string()
                on:click=move |_| set_shown.update(|s| *s = !*s)
            >
                {move || if shown.get() { "Hide" } else { "Show" }}
            </button>
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::is_about;

    #[test]
    fn an_error_about_an_item_or_key_shows_under_its_input_and_no_other() {
        assert!(is_about("requirements", "requirements"));
        assert!(is_about("requirements[1]", "requirements"));
        assert!(is_about("job.num_trainers", "job"));
        assert!(!is_about("jobs", "job"));
        assert!(!is_about("trainer.cpu", "trainer.memory"));
    }
}
