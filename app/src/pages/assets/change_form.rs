//! The form every change to an asset is made with (rename, delete a file,
//! share, publish, …): one server function, told which change by a hidden
//! field. Used by the asset's page and each of its parts.

use leptos::prelude::*;

use crate::api::assets::ChangeAsset;
use crate::models::{AssetOp, AssetRef};

/// A form for one [`AssetOp`] on `r`: the op and the asset as hidden
/// fields, the op's own fields as children (named `change[...]`).
#[component]
pub fn ChangeForm(
    /// The action (one per form, so each shows its own errors).
    action: ServerAction<ChangeAsset>,
    /// The asset.
    r: AssetRef,
    /// What the form does.
    op: AssetOp,
    /// The form's class.
    class: &'static str,
    /// The op's fields and the submit button.
    children: Children,
) -> impl IntoView {
    view! {
        <ActionForm action attr:class=class>
            <AssetRefInputs r field="asset" />
            <input type="hidden" name="change[op]" value=op.as_str() />
            {children()}
        </ActionForm>
    }
}

/// An [`AssetRef`] argument of a server function, as hidden form fields.
#[component]
pub fn AssetRefInputs(
    /// The asset.
    r: AssetRef,
    /// The argument's name.
    field: &'static str,
) -> impl IntoView {
    view! {
        <input type="hidden" name=format!("{field}[kind]") value=r.kind.as_str() />
        <input type="hidden" name=format!("{field}[owner]") value=r.owner.clone() />
        <input type="hidden" name=format!("{field}[name]") value=r.name.clone() />
    }
}
