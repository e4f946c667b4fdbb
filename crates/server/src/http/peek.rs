//! The parts of a JSON-RPC request body the guard reads before rmcp does: the id, and for a
//! `tools/call` the tool's name and arguments (counted against the ceiling, named in refusals).
//!
//! Read borrowed from the body, the arguments left as raw text until a refusal's audit digest
//! needs them: every request passes here, and building a full JSON tree of each body was a
//! measured share of a call. Whenever that reading fails (a duplicate member, a name that is
//! not a string, `params` that is not an object), the whole body is read as a JSON tree
//! instead, with the tree's rules (last duplicate wins, wrong types count as absent), so what
//! the guard sees never depends on which of the two readings answered.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// What the guard looks at in one request body.
#[derive(Debug)]
pub(super) struct Peek<'a> {
    pub id: Value,
    /// The tool name of a `tools/call` (`""` when it names none).
    pub tool: Option<Cow<'a, str>>,
    arguments: Arguments<'a>,
}

#[derive(Debug)]
enum Arguments<'a> {
    Absent,
    Raw(&'a RawValue),
    Parsed(Value),
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default)]
    id: Value,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    /// `Some` also for `"arguments": null` (a present null, as the tree reads it).
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

const TOOLS_CALL: &str = "tools/call";

impl<'a> Peek<'a> {
    /// `None` for a body that is not one JSON-RPC object.
    pub fn of(body: &'a [u8]) -> Option<Peek<'a>> {
        Self::borrowed(body).or_else(|| Self::tree(body))
    }

    /// The arguments of a `tools/call` (an empty object when it has none).
    pub fn arguments(&self) -> Value {
        match &self.arguments {
            Arguments::Absent => Value::Object(Map::new()),
            // The raw text was read as valid JSON already: this parse cannot fail.
            Arguments::Raw(raw) => {
                serde_json::from_str(raw.get()).unwrap_or_else(|_| Value::Object(Map::new()))
            }
            Arguments::Parsed(value) => value.clone(),
        }
    }

    fn borrowed(body: &'a [u8]) -> Option<Peek<'a>> {
        // A struct also reads a JSON array positionally; only an object is a message here.
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let message: Message<'a> = serde_json::from_slice(body).ok()?;
        if message.method.as_deref() != Some(TOOLS_CALL) {
            return Some(Peek {
                id: message.id,
                tool: None,
                arguments: Arguments::Absent,
            });
        }
        // The tree's reading of `params` that is not an object: no name, no arguments.
        let params = match message.params {
            Some(raw) if raw.get().starts_with('{') => {
                serde_json::from_str::<Params<'a>>(raw.get()).ok()?
            }
            _ => Params {
                name: None,
                arguments: None,
            },
        };
        Some(Peek {
            id: message.id,
            tool: Some(params.name.unwrap_or(Cow::Borrowed(""))),
            arguments: params.arguments.map_or(Arguments::Absent, Arguments::Raw),
        })
    }

    fn tree(body: &[u8]) -> Option<Peek<'static>> {
        let message: Value = serde_json::from_slice(body).ok()?;
        let message = message.as_object()?;
        let is_call = message.get("method").and_then(Value::as_str) == Some(TOOLS_CALL);
        let params = message.get("params");
        Some(Peek {
            id: message.get("id").cloned().unwrap_or(Value::Null),
            tool: is_call.then(|| {
                Cow::Owned(
                    params
                        .and_then(|p| p.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                )
            }),
            arguments: match params.and_then(|p| p.get("arguments")) {
                Some(value) if is_call => Arguments::Parsed(value.clone()),
                _ => Arguments::Absent,
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What a reading saw: (id, tool, arguments).
    type Seen = Option<(Value, Option<String>, Value)>;

    /// Both readings of one body: borrowed, then as a tree.
    fn both(body: &str) -> (Seen, Seen) {
        let view = |p: Peek<'_>| {
            (
                p.id.clone(),
                p.tool.as_deref().map(str::to_owned),
                p.arguments(),
            )
        };
        (
            Peek::borrowed(body.as_bytes()).map(view),
            Peek::tree(body.as_bytes()).map(view),
        )
    }

    #[test]
    fn a_call_is_read_borrowed_as_the_tree_reads_it() {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"kpi_report","arguments":{"metric":"csat","n":[1,2.5,"x"]}}}"#;
        let (fast, tree) = both(body);
        assert!(fast.is_some());
        assert_eq!(fast, tree);
        let (_, tool, args) = fast.unwrap();
        assert_eq!(tool.as_deref(), Some("kpi_report"));
        assert_eq!(args["metric"], "csat");
    }

    #[test]
    fn escaped_names_and_missing_parts_read_alike() {
        for body in [
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"kpi\u005freport"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["kpi_report",{}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{"name":"kpi_report"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"  {"id":{"deep":[1]},"method":"tools/call","params":{"name":"a","extra":{"name":"b"}}}"#,
        ] {
            let (fast, tree) = both(body);
            assert!(fast.is_some(), "{body}");
            assert_eq!(fast, tree, "{body}");
        }
    }

    #[test]
    fn what_the_borrowed_reading_refuses_the_tree_decides() {
        // A duplicate method: the tree keeps the last one. The borrowed reading refuses it, so
        // a `tools/call` cannot hide behind a first `ping` (nor the other way round).
        for body in [
            r#"{"id":1,"method":"ping","method":"tools/call","params":{"name":"kpi_report"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"kpi_report"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"id":1,"method":7}"#,
        ] {
            assert!(Peek::borrowed(body.as_bytes()).is_none(), "{body}");
            let peek = Peek::of(body.as_bytes()).unwrap();
            let tree = Peek::tree(body.as_bytes()).unwrap();
            assert_eq!(peek.tool, tree.tool, "{body}");
        }
        let duplicate =
            r#"{"id":1,"method":"ping","method":"tools/call","params":{"name":"kpi_report"}}"#;
        assert_eq!(
            Peek::of(duplicate.as_bytes()).unwrap().tool.as_deref(),
            Some("kpi_report")
        );
    }

    #[test]
    fn only_one_json_object_is_a_message() {
        for body in [
            r#"[{"id":1,"method":"tools/call","params":{"name":"kpi_report"}}]"#,
            r#"[1,"tools/call",{"name":"kpi_report"}]"#,
            r#"{"id":1,"method":"tools/call"} trailing"#,
            "not json",
            "",
        ] {
            assert!(Peek::of(body.as_bytes()).is_none(), "{body}");
        }
    }
}
