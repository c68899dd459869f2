//! Deterministic exploration summaries of large files (about 200 tokens): JSON
//! shape, CSV/TSV columns, YAML keys, XML elements, code imports and top-level
//! signatures, or for plain text its size, headers and opening/closing excerpts.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::blocks::{mime_extension, name_extension};
use crate::tokens;

/// Upper bound of a summary, in estimated tokens.
pub const SUMMARY_MAX_TOKENS: i64 = 260;

const CODE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cs", "go", "h", "hpp", "java", "js", "jsx", "kt", "m", "mjs", "php", "py",
    "rb", "rs", "scala", "sh", "sql", "swift", "ts", "tsx",
];

/// What kind of content a file holds, from its name, then its MIME type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// JSON or NDJSON.
    Json,
    /// Comma-separated values.
    Csv,
    /// Tab-separated values.
    Tsv,
    /// YAML.
    Yaml,
    /// XML.
    Xml,
    /// Source code.
    Code,
    /// Anything else.
    Text,
}

/// Classifies a file by extension (name first, then MIME table) and MIME prefix.
pub fn classify(name: Option<&str>, mime: Option<&str>) -> Kind {
    let ext = name
        .and_then(name_extension)
        .or_else(|| mime.and_then(mime_extension).map(str::to_owned))
        .unwrap_or_default();
    let mime = mime.unwrap_or("").trim().to_ascii_lowercase();
    match ext.as_str() {
        "json" | "ndjson" => return Kind::Json,
        "csv" => return Kind::Csv,
        "tsv" => return Kind::Tsv,
        "yaml" | "yml" => return Kind::Yaml,
        "xml" => return Kind::Xml,
        e if CODE_EXTENSIONS.contains(&e) => return Kind::Code,
        _ => {}
    }
    if mime.contains("json") {
        Kind::Json
    } else if mime.contains("yaml") {
        Kind::Yaml
    } else if mime.ends_with("/xml") {
        Kind::Xml
    } else if mime.starts_with("text/x-")
        || mime.contains("javascript")
        || mime.contains("typescript")
    {
        Kind::Code
    } else {
        Kind::Text
    }
}

/// The exploration summary of a file's content.
pub fn summarize(content: &str, name: Option<&str>, mime: Option<&str>) -> String {
    let s = match classify(name, mime) {
        Kind::Json => explore_json(content),
        Kind::Csv => explore_delimited(content, ',', "CSV"),
        Kind::Tsv => explore_delimited(content, '\t', "TSV"),
        Kind::Yaml => explore_yaml(content),
        Kind::Xml => explore_xml(content),
        Kind::Code => explore_code(content, name),
        Kind::Text => explore_text(content, name),
    };
    cap(&s)
}

fn cap(s: &str) -> String {
    let cut = tokens::truncate_to_tokens(s, SUMMARY_MAX_TOKENS);
    if cut.len() == s.len() {
        s.to_owned()
    } else {
        format!("{}…", cut.trim_end())
    }
}

/// One line, whitespace collapsed, at most `max` characters (then `...`).
pub fn one_line(text: &str, max: usize) -> String {
    let compact = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if compact.chars().count() <= max {
        return compact;
    }
    let cut: String = compact.chars().take(max).collect();
    format!("{cut}...")
}

fn line_count(content: &str) -> usize {
    content.split('\n').count()
}

fn describe_json(v: &Value, depth: usize) -> String {
    if depth >= 2 {
        return "...".into();
    }
    match v {
        Value::Array(a) => {
            let sample: Vec<String> = a
                .iter()
                .take(3)
                .map(|x| describe_json(x, depth + 1))
                .collect();
            if sample.is_empty() {
                format!("array(len={})", a.len())
            } else {
                format!("array(len={}, sample=[{}])", a.len(), sample.join(", "))
            }
        }
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().take(10).map(String::as_str).collect();
            if keys.is_empty() {
                "object(keys=0)".into()
            } else {
                format!("object(keys={}: {})", o.len(), keys.join(", "))
            }
        }
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Null => "null".into(),
    }
}

fn explore_json(content: &str) -> String {
    match serde_json::from_str::<Value>(content) {
        Ok(v) => {
            let top = match &v {
                Value::Array(_) => "array",
                Value::Object(_) => "object",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                Value::Null => "null",
            };
            format!(
                "Structured summary (JSON):\nTop-level type: {top}.\nShape: {}.",
                describe_json(&v, 0)
            )
        }
        Err(_) => explore_ndjson(content).unwrap_or_else(|| {
            format!(
                "Structured summary (JSON): not valid JSON.\nCharacters: {}.\nLines: {}.",
                content.chars().count(),
                line_count(content)
            )
        }),
    }
}

fn explore_ndjson(content: &str) -> Option<String> {
    let lines: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
    let first: Value = serde_json::from_str(lines.first()?).ok()?;
    Some(format!(
        "Structured summary (NDJSON):\nRecords: {}.\nFirst record shape: {}.",
        lines.len(),
        describe_json(&first, 0)
    ))
}

fn explore_delimited(content: &str, delim: char, kind: &str) -> String {
    let rows: Vec<&str> = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let Some(header) = rows.first() else {
        return format!("Structured summary ({kind}): no rows found.");
    };
    let cols: Vec<&str> = header
        .split(delim)
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let first = rows
        .get(1)
        .map(|r| one_line(r, 160))
        .unwrap_or_else(|| "(no data rows)".into());
    format!(
        "Structured summary ({kind}):\nRows: {}.\nColumns ({}): {}.\nFirst row sample: {first}.",
        rows.len() - 1,
        cols.len(),
        one_line(&cols.join(", "), 400)
    )
}

fn unique_ordered<I: IntoIterator<Item = String>>(items: I, max: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for i in items {
        if out.len() >= max {
            break;
        }
        if seen.insert(i.clone()) {
            out.push(i);
        }
    }
    out
}

fn explore_yaml(content: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"^([A-Za-z0-9_.\-]+):(\s|$)").expect("valid regex"));
    let keys = unique_ordered(
        content
            .lines()
            .filter_map(|l| re.captures(l).map(|c| c[1].to_owned())),
        30,
    );
    format!(
        "Structured summary (YAML):\nLines: {}.\nTop-level keys ({}): {}.",
        line_count(content),
        keys.len(),
        if keys.is_empty() {
            "(none detected)".into()
        } else {
            keys.join(", ")
        }
    )
}

fn explore_xml(content: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re =
        RE.get_or_init(|| Regex::new(r"<([A-Za-z][A-Za-z0-9_:\-]*)[\s/>]").expect("valid regex"));
    let mut tags = re.captures_iter(content).map(|c| c[1].to_owned());
    let root = tags.next().unwrap_or_else(|| "unknown".into());
    let children = unique_ordered(tags.filter(|t| *t != root), 30);
    format!(
        "Structured summary (XML):\nRoot element: {root}.\nChild elements seen: {}.",
        if children.is_empty() {
            "(none detected)".into()
        } else {
            children.join(", ")
        }
    )
}

fn explore_code(content: &str, name: Option<&str>) -> String {
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    static SIG: OnceLock<Regex> = OnceLock::new();
    let import = IMPORT.get_or_init(|| {
        Regex::new(r"^\s*(import\s|from\s+\S+\s+import\s|use\s+[\w:]+|#include\s|package\s|const\s+\w+\s*=\s*require\(|require\()")
            .expect("valid regex")
    });
    let sig = SIG.get_or_init(|| {
        Regex::new(r"^(pub(\([\w:]+\))?\s+)?(export\s+)?(default\s+)?(async\s+)?(unsafe\s+)?(fn|function|class|interface|type|struct|enum|trait|impl|def|func|mod|module|const\s+\w+\s*=\s*(async\s*)?\()")
            .expect("valid regex")
    });
    let lines: Vec<&str> = content.lines().collect();
    let imports = unique_ordered(
        lines
            .iter()
            .filter(|l| import.is_match(l))
            .map(|l| one_line(l, 90)),
        8,
    );
    let sigs = unique_ordered(
        lines
            .iter()
            .filter(|l| sig.is_match(l))
            .map(|l| one_line(l, 100)),
        14,
    );
    let label = name
        .map(|n| format!(" ({})", one_line(n, 80)))
        .unwrap_or_default();
    format!(
        "Code exploration summary{label}:\nLines: {}.\nImports/dependencies ({}): {}.\nTop-level definitions ({}): {}.\nFirst line: {}.",
        line_count(content),
        imports.len(),
        if imports.is_empty() { "none detected".into() } else { imports.join(" | ") },
        sigs.len(),
        if sigs.is_empty() { "none detected".into() } else { sigs.join(" | ") },
        one_line(lines.first().copied().unwrap_or(""), 100)
    )
}

fn text_headers(content: &str) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^(#{1,6}\s+\S|[A-Z0-9][A-Z0-9\s:_\-]{6,}$)").expect("valid regex")
    });
    unique_ordered(
        content
            .lines()
            .map(str::trim)
            .filter(|l| l.len() > 1 && re.is_match(l))
            .map(|l| one_line(l, 80)),
        10,
    )
}

fn head_chars(s: &str, n: usize) -> &str {
    crate::text::prefix_chars(s, n)
}

fn tail_chars(s: &str, n: usize) -> &str {
    crate::text::suffix_chars(s, n)
}

fn explore_text(content: &str, name: Option<&str>) -> String {
    let words = content.split_whitespace().count();
    let headers = text_headers(content);
    let label = name
        .map(|n| format!(" ({})", one_line(n, 80)))
        .unwrap_or_default();
    format!(
        "Text exploration summary{label}:\nCharacters: {}. Words: {words}. Lines: {}.\nSection headers: {}.\nOpening excerpt: {}.\nClosing excerpt: {}.",
        content.chars().count(),
        line_count(content),
        if headers.is_empty() { "none detected".into() } else { headers.join(" | ") },
        one_line(head_chars(content, 300), 300),
        one_line(tail_chars(content, 300), 300),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let s = summarize(
            r#"{"a":[1,2,{"b":1}],"c":{"d":true}}"#,
            Some("x.json"),
            None,
        );
        assert!(s.contains("Top-level type: object."), "{s}");
        assert!(s.contains("object(keys=2: a, c)"), "{s}");
        let s = summarize("[1,2,3]", None, Some("application/json"));
        assert!(
            s.contains("array(len=3, sample=[number, number, number])"),
            "{s}"
        );
        let s = summarize("{\"a\":1}\n{\"a\":2}\n", Some("x.json"), None);
        assert!(s.contains("NDJSON") && s.contains("Records: 2."), "{s}");
    }

    #[test]
    fn code_imports_and_signatures() {
        let src = "use std::io;\nimport x from 'y'\n\npub fn main() {\n  let a = 1;\n}\nstruct S;\nfn helper(x: u8) -> u8 { x }\n";
        let s = summarize(src, Some("src/main.rs"), None);
        assert!(
            s.contains("Imports/dependencies (2): use std::io; | import x from 'y'"),
            "{s}"
        );
        assert!(
            s.contains("pub fn main() {") && s.contains("struct S;"),
            "{s}"
        );
        assert!(!s.contains("let a"), "{s}");
    }

    #[test]
    fn csv_text_and_cap() {
        let s = summarize("id,name,total\n1,a,3\n2,b,4\n", Some("t.csv"), None);
        assert!(
            s.contains("Rows: 2.") && s.contains("Columns (3): id, name, total."),
            "{s}"
        );
        let long = format!(
            "# Title\n\nINTRODUCTION PART\n{}\nthe end",
            "word ".repeat(20000)
        );
        let s = summarize(&long, Some("notes.md"), None);
        assert!(
            s.contains("Section headers: # Title | INTRODUCTION PART"),
            "{s}"
        );
        assert!(
            s.contains("Closing excerpt:") && s.contains("the end"),
            "{s}"
        );
        assert!(tokens::estimate(&s) <= SUMMARY_MAX_TOKENS + 1);
        assert_eq!(summarize(&long, Some("notes.md"), None), s);
    }
}
