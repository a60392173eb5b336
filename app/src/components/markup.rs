//! HTML written straight into a string, for the rows of a table that is
//! rendered on the server and never hydrated (the job table).
//!
//! Building a `view!` for each of a page's rows made a tree of erased views
//! and attributes, each allocated, walked and dropped, with hydration markers
//! no browser code ever reads: the rows were a third of a `/jobs` page's
//! server time (see the job_list bench in docs/benchmarks.md). A row written here
//! costs a few string pushes. Everything that is not a tag or an attribute
//! name is escaped on the way in, so the fragment is as safe to inject with
//! `inner_html` as a view's output.

use std::fmt::Display;
use std::fmt::Write as _;

/// An HTML fragment under construction. Tag and attribute names are
/// `&'static str` (written by the code, never by a user); text and attribute
/// values are escaped as they are written.
#[derive(Debug, Default)]
pub struct Markup {
    /// The HTML so far.
    out: String,
}

impl Markup {
    /// An empty fragment with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            out: String::with_capacity(bytes),
        }
    }

    /// `<tag name="value" …>`.
    pub fn open(&mut self, tag: &'static str, attrs: &[(&'static str, &str)]) -> &mut Self {
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            html_escape::encode_double_quoted_attribute_to_string(value, &mut self.out);
            self.out.push('"');
        }
        self.out.push('>');
        self
    }

    /// `</tag>`.
    pub fn close(&mut self, tag: &'static str) -> &mut Self {
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
        self
    }

    /// Text, escaped.
    pub fn text(&mut self, text: &str) -> &mut Self {
        html_escape::encode_text_to_string(text, &mut self.out);
        self
    }

    /// A value's `Display`, escaped (numbers, dates: written without a
    /// string of their own when they need no escaping).
    pub fn display(&mut self, value: impl Display) -> &mut Self {
        let start = self.out.len();
        let _ = write!(self.out, "{value}");
        if self.out[start..].contains(['<', '>', '&']) {
            let raw = self.out.split_off(start);
            self.text(&raw);
        }
        self
    }

    /// `<tag …>text</tag>`.
    pub fn element(
        &mut self,
        tag: &'static str,
        attrs: &[(&'static str, &str)],
        text: &str,
    ) -> &mut Self {
        self.open(tag, attrs).text(text).close(tag)
    }

    /// The fragment's HTML.
    pub fn into_string(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attribute_values_are_escaped_and_names_are_not() {
        let mut m = Markup::default();
        m.open("td", &[("title", "say \"hi\" & <go>")])
            .text("<script>alert('x')</script> & co")
            .close("td");
        assert_eq!(
            m.into_string(),
            "<td title=\"say &quot;hi&quot; &amp; &lt;go&gt;\">\
             &lt;script&gt;alert('x')&lt;/script&gt; &amp; co</td>"
        );
    }

    #[test]
    fn a_displayed_value_is_escaped_like_text() {
        let mut m = Markup::default();
        m.display(42).display("a<b").element("b", &[], "ok");
        assert_eq!(m.into_string(), "42a&lt;b<b>ok</b>");
    }
}
