//! The input of one typed parameter (a template's, a notebook's): a
//! number, a choice, text or a reference, with its default and its error.

use leptos::prelude::*;

use crate::components::form::FieldError;
use crate::error::AppError;
use crate::models::{ParamType, TemplateParam};

/// The input of one parameter, with its error.
#[component]
pub fn ParamField(
    p: TemplateParam,
    /// The value to show instead of the default (a job run again).
    value: Option<String>,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let id = format!("param-{}", p.name);
    let input_name = format!("values[{}]", p.name);
    let default = value.unwrap_or_else(|| p.default.as_ref().map(text_of).unwrap_or_default());
    let field = format!("values.{}", p.name);
    let label = if p.description.is_empty() {
        p.name.clone()
    } else {
        format!("{} ({})", p.name, p.description)
    };
    let required = p.required;
    let input = match &p.kind {
        ParamType::Int { min, max } => view! {
            <input id=id.clone() name=input_name type="number" step="1" value=default required=required
                min=min.map(|m| m.to_string()) max=max.map(|m| m.to_string()) />
        }
        .into_any(),
        ParamType::Float { min, max } => view! {
            <input id=id.clone() name=input_name type="number" step="any" value=default required=required
                min=min.map(|m| m.to_string()) max=max.map(|m| m.to_string()) />
        }
        .into_any(),
        ParamType::Bool => {
            let on = default == "true";
            view! {
                <select id=id.clone() name=input_name>
                    <option value="true" selected=on>"true"</option>
                    <option value="false" selected=!on>"false"</option>
                </select>
            }
            .into_any()
        }
        ParamType::Enum { choices } => {
            let options = choices
                .iter()
                .map(|c| {
                    let selected = *c == default;
                    view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                })
                .collect_view();
            view! { <select id=id.clone() name=input_name>{options}</select> }.into_any()
        }
        ParamType::String { pattern } => view! {
            <input id=id.clone() name=input_name type="text" value=default required=required
                pattern=pattern.clone() />
        }
        .into_any(),
        ParamType::Dataset | ParamType::Model | ParamType::Environment => {
            let hint = match p.kind {
                ParamType::Dataset => "a dataset: name or owner/name",
                ParamType::Model => "a model: name or owner/name, either with :version (none: the newest finished)",
                _ => "an environment: name or owner/name, :version",
            };
            view! {
                <input id=id.clone() name=input_name type="text" value=default required=required
                    placeholder=hint />
            }
            .into_any()
        }
    };
    view! {
        <label for=id>{label}</label>
        {input}
        <FieldError error field />
    }
}

/// A default as a form field shows it.
pub fn text_of(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
