//! What the dialogs' free-text fields parse into: a command line, and
//! `KEY=VALUE` lines. Shared by every form that has them (jobs, serving).

use super::jobs::EnvVar;
use crate::error::AppError;

/// Splits a command line into words: spaces separate, quotes group, a
/// backslash escapes the next character.
pub fn split_command(line: &str) -> Result<Vec<String>, AppError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    in_word = true;
                }
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(AppError::invalid(
            "command",
            "A quote in the command is not closed.",
        ));
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Words as a command line [`split_command`] reads back into the same
/// words: plain ones as they are, others quoted.
pub fn join_command(words: &[String]) -> String {
    let quoted = words.iter().map(|w| {
        let plain = !w.is_empty()
            && !w
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\'));
        if plain {
            w.clone()
        } else if !w.contains('\'') {
            format!("'{w}'")
        } else {
            format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
        }
    });
    quoted.collect::<Vec<_>>().join(" ")
}

/// `KEY=VALUE` lines (blank lines and `#` comments skipped).
pub fn parse_env_lines(text: &str) -> Result<Vec<EnvVar>, AppError> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.split_once('=')
                .map(|(k, v)| EnvVar {
                    name: k.trim().to_owned(),
                    value: v.to_owned(),
                })
                .ok_or_else(|| AppError::invalid("env", format!("“{l}” is not KEY=VALUE.")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joined_command_splits_back_into_the_same_words() {
        let words: Vec<String> = [
            "python",
            "train.py",
            "--name",
            "two words",
            "",
            "it's",
            r#"say "hi" \ there"#,
        ]
        .map(str::to_owned)
        .to_vec();
        let line = join_command(&words);
        assert_eq!(split_command(&line).unwrap(), words, "{line}");
        assert!(line.starts_with("python train.py --name 'two words' ''"));
    }

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_command(r#"python -c "print('a b')" x\ y"#).unwrap(),
            ["python", "-c", "print('a b')", "x y"]
        );
        assert_eq!(split_command("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split_command("echo ''").unwrap(), ["echo", ""]);
        assert_eq!(
            split_command("echo 'open").unwrap_err().field(),
            Some("command")
        );
    }

    #[test]
    fn env_lines_skip_blanks_and_comments_and_name_their_field_when_bad() {
        let vars = parse_env_lines("A=1\n\n# note\n B = two=2").unwrap();
        assert_eq!(vars.len(), 2);
        assert_eq!(
            (vars[1].name.as_str(), vars[1].value.as_str()),
            ("B", " two=2")
        );
        assert_eq!(
            parse_env_lines("JUSTAKEY").unwrap_err().field(),
            Some("env")
        );
    }
}
