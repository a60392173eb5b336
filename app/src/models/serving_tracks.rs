//! Releasing a model version by degrees: one serving instance runs up to
//! three *tracks* of replicas, each of one version of its model. The main
//! track answers most calls; a canary takes a share of them and answers
//! them itself; a shadow gets a copy of a share of the calls, and its
//! answers are recorded beside the main track's but never returned. A main
//! track that follows an alias (`model@production`) rolls to the version
//! the alias names whenever it moves, replica by replica.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The most replicas one instance (or one of its tracks) may ask for.
pub const MAX_SERVING_REPLICAS: u32 = 64;

/// Which replicas of an instance a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Track {
    /// The version most calls go to.
    Main,
    /// A version taking a share of the calls and answering them.
    Canary,
    /// A version getting a copy of a share of the calls; its answers are
    /// recorded, never returned.
    Shadow,
}

impl Track {
    /// Every track, in the order pages list them.
    pub const ALL: [Track; 3] = [Track::Main, Track::Canary, Track::Shadow];

    /// The stored and URL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Track::Main => "main",
            Track::Canary => "canary",
            Track::Shadow => "shadow",
        }
    }

    /// Reads [`Track::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// As pages show it.
    pub fn label(self) -> &'static str {
        match self {
            Track::Main => "Main",
            Track::Canary => "Canary",
            Track::Shadow => "Shadow",
        }
    }
}

/// A second version answering a share of an instance's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Canary {
    /// The version of the instance's model (ready, and not the main one).
    #[cfg_attr(feature = "ssr", schema(minimum = 1))]
    pub version: u32,
    /// Percent of the calls it answers, 1 to 99.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 99))]
    pub percent: u32,
    /// Its replicas.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub replicas: u32,
}

/// A version getting a copy of a share of the calls, answering no one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Shadow {
    /// The version of the instance's model.
    #[cfg_attr(feature = "ssr", schema(minimum = 1))]
    pub version: u32,
    /// Percent of the calls mirrored to it, 1 to 100.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 100))]
    pub percent: u32,
    /// Its replicas.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub replicas: u32,
}

fn check_version(field: &str, version: u32) -> Result<(), AppError> {
    if version == 0 {
        return Err(AppError::invalid(field, "Versions start at 1."));
    }
    Ok(())
}

fn check_replicas(field: &str, n: u32) -> Result<(), AppError> {
    if n == 0 || n > MAX_SERVING_REPLICAS {
        return Err(AppError::invalid(
            field,
            format!("From 1 to {MAX_SERVING_REPLICAS} replicas."),
        ));
    }
    Ok(())
}

impl Canary {
    /// Checks its fields; the error names the one at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        check_version("canary.version", self.version)?;
        if !(1..=99).contains(&self.percent) {
            return Err(AppError::invalid(
                "canary.percent",
                "A canary takes from 1 to 99 percent of the calls (promote it to take them all).",
            ));
        }
        check_replicas("canary.replicas", self.replicas)
    }
}

impl Shadow {
    /// Checks its fields; the error names the one at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        check_version("shadow.version", self.version)?;
        if !(1..=100).contains(&self.percent) {
            return Err(AppError::invalid(
                "shadow.percent",
                "A shadow gets a copy of from 1 to 100 percent of the calls.",
            ));
        }
        check_replicas("shadow.replicas", self.replicas)
    }
}

/// Whether the `n`th call (counting from 0) is one of `percent` in 100,
/// spread evenly (10 percent: every tenth call, not ten in a row), so a
/// share holds over any short window as well as over a long one.
pub fn takes_share(n: u64, percent: u32) -> bool {
    let p = u64::from(percent.min(100));
    (n + 1) * p / 100 > n * p / 100
}

/// A change to an instance's release: one click each on its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Release {
    /// Starts a canary, or changes its version, share or size.
    Canary(Canary),
    /// Starts a shadow, or changes it.
    Shadow(Shadow),
    /// The canary's version becomes the main one (the main track rolls to
    /// it replica by replica; an alias the instance follows moves to it),
    /// and the canary ends.
    Promote,
    /// The canary ends; every call goes to the main version again.
    Rollback,
    /// The shadow ends.
    EndShadow,
}

impl Release {
    /// What the audit log and messages call it.
    pub fn describe(&self) -> String {
        match self {
            Release::Canary(c) => format!("canary v{} at {}%", c.version, c.percent),
            Release::Shadow(s) => format!("shadow v{} mirroring {}%", s.version, s.percent),
            Release::Promote => "promote the canary".to_owned(),
            Release::Rollback => "roll back the canary".to_owned(),
            Release::EndShadow => "end the shadow".to_owned(),
        }
    }
}

/// A release as the page's forms send it: every field text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseForm {
    /// `canary`, `shadow`, `promote`, `rollback` or `end_shadow`.
    pub action: String,
    /// The version (canary, shadow).
    #[serde(default)]
    pub version: String,
    /// The share, percent (canary, shadow).
    #[serde(default)]
    pub percent: String,
    /// Replicas (canary, shadow; empty: 1).
    #[serde(default)]
    pub replicas: String,
}

impl ReleaseForm {
    /// The release it asks for; the error names the field at fault.
    pub fn to_release(&self) -> Result<Release, AppError> {
        let number = |field: &str, text: &str, what: &str| -> Result<u32, AppError> {
            text.trim()
                .parse()
                .map_err(|_| AppError::invalid(field, format!("{what} must be a whole number.")))
        };
        let sized = |track: &str| -> Result<(u32, u32, u32), AppError> {
            let version = number(&format!("{track}.version"), &self.version, "The version")?;
            let percent = number(&format!("{track}.percent"), &self.percent, "The share")?;
            let replicas = match self.replicas.trim() {
                "" => 1,
                r => number(&format!("{track}.replicas"), r, "The number of replicas")?,
            };
            Ok((version, percent, replicas))
        };
        Ok(match self.action.as_str() {
            "canary" => {
                let (version, percent, replicas) = sized("canary")?;
                Release::Canary(Canary {
                    version,
                    percent,
                    replicas,
                })
            }
            "shadow" => {
                let (version, percent, replicas) = sized("shadow")?;
                Release::Shadow(Shadow {
                    version,
                    percent,
                    replicas,
                })
            }
            "promote" => Release::Promote,
            "rollback" => Release::Rollback,
            "end_shadow" => Release::EndShadow,
            _ => return Err(AppError::invalid("action", "Choose what to release.")),
        })
    }
}

/// One track of an instance as its page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TrackView {
    /// Which.
    pub track: Track,
    /// The version it serves.
    pub version: u32,
    /// Percent of the calls it answers (main, canary) or gets a copy of
    /// (shadow).
    pub percent: u32,
    /// Replicas it runs.
    pub replicas: u32,
}

impl TrackView {
    /// Its share as pages and the CLI write it: `10%`, or `copy of 100%`
    /// for a shadow.
    pub fn share(&self) -> String {
        match self.track {
            Track::Shadow => format!("copy of {}%", self.percent),
            _ => format!("{}%", self.percent),
        }
    }
}

/// One call mirrored to a shadow: what the main version answered beside
/// what the shadow did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ShadowCall {
    /// When, Unix ms.
    pub at: i64,
    /// The shadow's version.
    pub version: u32,
    /// The path called (`predict`…).
    pub path: String,
    /// The main version's HTTP status.
    pub primary_status: u16,
    /// The shadow's (0: it did not answer).
    pub shadow_status: u16,
    /// Milliseconds each took.
    pub primary_ms: f64,
    /// The shadow's.
    pub shadow_ms: f64,
    /// Whether both answers are the same (numbers within 1e-6 relative).
    pub agrees: bool,
    /// The start of the request body.
    pub request: String,
    /// The start of the main version's answer.
    pub primary: String,
    /// The start of the shadow's answer, or why there is none.
    pub shadow: String,
}

/// The most of a body a shadow call keeps.
pub const SHADOW_EXCERPT: usize = 512;
/// Shadow calls kept per instance (the newest).
pub const SHADOW_CALLS_KEPT: usize = 200;

/// Whether two answers say the same: equal JSON with numbers within a
/// relative 1e-6 of each other (a model on another build may round the
/// last bits differently), or equal bytes when either is not JSON.
pub fn answers_agree(a: &[u8], b: &[u8]) -> bool {
    match (
        serde_json::from_slice::<serde_json::Value>(a),
        serde_json::from_slice::<serde_json::Value>(b),
    ) {
        (Ok(x), Ok(y)) => json_close(&x, &y),
        _ => a == b,
    }
}

fn json_close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 1e-6 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_close(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        (x, y) => x == y,
    }
}

/// The first [`SHADOW_EXCERPT`] bytes of a body as text (cut at a
/// character boundary, marked when cut).
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= SHADOW_EXCERPT {
        return text.into_owned();
    }
    let mut end = SHADOW_EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_spread_evenly_over_the_calls() {
        let taken: Vec<u64> = (0..30).filter(|n| takes_share(*n, 10)).collect();
        assert_eq!(taken, vec![9, 19, 29]);
        assert_eq!((0..1000).filter(|n| takes_share(*n, 37)).count(), 370);
        assert_eq!((0..100).filter(|n| takes_share(*n, 100)).count(), 100);
        assert_eq!((0..100).filter(|n| takes_share(*n, 0)).count(), 0);
    }

    #[test]
    fn a_canary_takes_less_than_all_calls_and_a_shadow_up_to_all() {
        let canary = |percent| Canary {
            version: 2,
            percent,
            replicas: 1,
        };
        assert!(canary(10).validate().is_ok());
        assert_eq!(
            canary(100).validate().unwrap_err().field(),
            Some("canary.percent")
        );
        assert_eq!(
            canary(0).validate().unwrap_err().field(),
            Some("canary.percent")
        );
        let shadow = Shadow {
            version: 0,
            percent: 100,
            replicas: 1,
        };
        assert_eq!(
            shadow.validate().unwrap_err().field(),
            Some("shadow.version")
        );
        assert!(Shadow {
            version: 1,
            ..shadow
        }
        .validate()
        .is_ok());
        let big = Shadow {
            version: 1,
            percent: 50,
            replicas: 65,
        };
        assert_eq!(big.validate().unwrap_err().field(), Some("shadow.replicas"));
    }

    #[test]
    fn answers_agree_when_their_json_is_equal_up_to_rounding() {
        assert!(answers_agree(
            br#"{"y":[0.1,2]}"#,
            br#"{ "y": [0.10000000001, 2.0] }"#
        ));
        assert!(!answers_agree(br#"{"y":[0.1,2]}"#, br#"{"y":[0.2,2]}"#));
        assert!(!answers_agree(br#"{"y":[1]}"#, br#"{"y":[1],"z":0}"#));
        assert!(answers_agree(b"plain", b"plain"));
        assert!(!answers_agree(b"plain", b"other"));
    }

    #[test]
    fn an_excerpt_is_cut_at_a_character_boundary() {
        let long = "é".repeat(400);
        let cut = excerpt(long.as_bytes());
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= SHADOW_EXCERPT + '…'.len_utf8());
        assert_eq!(excerpt(b"short"), "short");
    }

    #[test]
    fn a_release_form_names_the_field_at_fault() {
        let form = |action: &str, version: &str, percent: &str| ReleaseForm {
            action: action.into(),
            version: version.into(),
            percent: percent.into(),
            replicas: String::new(),
        };
        assert_eq!(
            form("canary", "2", "10").to_release().unwrap(),
            Release::Canary(Canary {
                version: 2,
                percent: 10,
                replicas: 1
            })
        );
        let field = |f: ReleaseForm| f.to_release().unwrap_err().field().map(str::to_owned);
        assert_eq!(
            field(form("canary", "x", "10")).as_deref(),
            Some("canary.version")
        );
        assert_eq!(
            field(form("shadow", "2", "")).as_deref(),
            Some("shadow.percent")
        );
        assert_eq!(field(form("launch", "", "")).as_deref(), Some("action"));
        assert_eq!(
            form("promote", "", "").to_release().unwrap(),
            Release::Promote
        );
    }

    #[test]
    fn a_release_change_reads_from_tagged_json() {
        let r: Release =
            serde_json::from_str(r#"{"action":"canary","version":3,"percent":10,"replicas":1}"#)
                .unwrap();
        assert_eq!(
            r,
            Release::Canary(Canary {
                version: 3,
                percent: 10,
                replicas: 1
            })
        );
        let p: Release = serde_json::from_str(r#"{"action":"promote"}"#).unwrap();
        assert_eq!(p, Release::Promote);
    }
}
