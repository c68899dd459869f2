//! `<file …>…</file>` blocks in message text, the storage extension of a file, and
//! the compact reference texts that replace externalized payloads.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::text;

/// One `<file …>…</file>` block found in a text (byte offsets into that text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBlock<'a> {
    /// Offset of `<file`.
    pub start: usize,
    /// Offset just past `</file>`.
    pub end: usize,
    /// The opening tag exactly as written.
    pub open: &'a str,
    /// The content between the tags.
    pub body: &'a str,
    /// The closing tag exactly as written.
    pub close: &'a str,
    /// The `name` attribute, when present and non-empty.
    pub name: Option<String>,
    /// The `mime` attribute, when present and non-empty.
    pub mime: Option<String>,
}

/// A whole block. No capture groups: finding the span runs on the regex's DFA, while
/// capturing inside a large block fell back to its slowest engine (≈ 600
/// instructions per byte: 6 ms of writer time for a 100 kB file). The tags are split
/// off the span instead ([`split_block`]).
fn block_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?is)<file\b[^>]*>.*?</file>").expect("valid regex"))
}

/// The closing tag every block ends with (matched case-insensitively, ASCII).
const CLOSE_TAG_LEN: usize = "</file>".len();

/// `(open, body, close)` of a span [`block_re`] matched: the opening tag ends at the
/// first `>` (its attributes contain none), the closing tag is the last 7 bytes.
fn split_block(whole: &str) -> Option<(&str, &str, &str)> {
    let open_end = whole.find('>')? + 1;
    let close_start = whole.len().checked_sub(CLOSE_TAG_LEN)?;
    Some((
        whole.get(..open_end)?,
        whole.get(open_end..close_start)?,
        whole.get(close_start..)?,
    ))
}

fn attr_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"([A-Za-z_:][A-Za-z0-9_:\-.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"#)
            .expect("valid regex")
    })
}

/// The attributes of an opening tag, keys lower-cased; empty values are dropped.
pub fn parse_attributes(open_tag: &str) -> HashMap<String, String> {
    let inner = open_tag
        .get(5..open_tag.len().saturating_sub(1))
        .unwrap_or("");
    let mut out = HashMap::new();
    for c in attr_re().captures_iter(inner) {
        let key = c[1].to_ascii_lowercase();
        let value = c
            .get(2)
            .or_else(|| c.get(3))
            .or_else(|| c.get(4))
            .map(|m| m.as_str().trim().to_owned())
            .unwrap_or_default();
        if !value.is_empty() {
            out.insert(key, value);
        }
    }
    out
}

/// Every `<file …>…</file>` block of a text, in order (tags case-insensitive).
pub fn parse_file_blocks(text: &str) -> Vec<FileBlock<'_>> {
    if !text
        .as_bytes()
        .windows(5)
        .any(|w| w.eq_ignore_ascii_case(b"<file"))
    {
        return Vec::new();
    }
    block_re()
        .find_iter(text)
        .filter_map(|whole| {
            let (open, body, close) = split_block(whole.as_str())?;
            let attrs = parse_attributes(open);
            Some(FileBlock {
                start: whole.start(),
                end: whole.end(),
                open,
                body,
                close,
                name: attrs.get("name").cloned(),
                mime: attrs.get("mime").cloned(),
            })
        })
        .collect()
}

/// Extension of a file name: the part after the last dot of its base name when it
/// is 1–10 ASCII letters or digits (lower-cased); anything else gives `None`.
pub fn name_extension(name: &str) -> Option<String> {
    let base = name.trim().rsplit(['/', '\\']).next().unwrap_or("");
    let dot = base.rfind('.')?;
    if dot == 0 {
        return None;
    }
    let ext = text::tail(base, dot + 1);
    let ok = (1..=10).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| ext.to_ascii_lowercase())
}

const MIME_EXTENSIONS: &[(&str, &str)] = &[
    ("application/json", "json"),
    ("application/xml", "xml"),
    ("application/yaml", "yaml"),
    ("application/x-yaml", "yaml"),
    ("application/x-ndjson", "json"),
    ("application/csv", "csv"),
    ("application/javascript", "js"),
    ("application/typescript", "ts"),
    ("application/x-python-code", "py"),
    ("application/x-rust", "rs"),
    ("application/x-sh", "sh"),
    ("text/csv", "csv"),
    ("text/markdown", "md"),
    ("text/plain", "txt"),
    ("text/tab-separated-values", "tsv"),
    ("text/x-c", "c"),
    ("text/x-c++", "cpp"),
    ("text/x-go", "go"),
    ("text/x-java", "java"),
    ("text/x-python", "py"),
    ("text/x-rust", "rs"),
    ("text/x-shellscript", "sh"),
    ("text/x-typescript", "ts"),
    ("text/javascript", "js"),
    ("text/xml", "xml"),
];

/// Extension for a MIME type from a fixed table.
pub fn mime_extension(mime: &str) -> Option<&'static str> {
    let m = mime.trim().to_ascii_lowercase();
    let m = m.split(';').next().unwrap_or("").trim();
    MIME_EXTENSIONS
        .iter()
        .find(|(k, _)| *k == m)
        .map(|(_, v)| *v)
}

/// The storage extension: from the name, else the MIME type, else `txt`. Always
/// 1–10 lower-case ASCII letters or digits, so it can never carry a path.
pub fn storage_extension(name: Option<&str>, mime: Option<&str>) -> String {
    name.and_then(name_extension)
        .or_else(|| mime.and_then(mime_extension).map(str::to_owned))
        .unwrap_or_else(|| "txt".to_owned())
}

/// `1234567` → `1,234,567` (the reference's en-US grouping).
pub fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn summary_or_placeholder(summary: &str) -> &str {
    let t = summary.trim();
    if t.is_empty() {
        "(no summary available)"
    } else {
        t
    }
}

/// `[LCM File: file_… | name | mime | N bytes]`, a blank line, `Exploration Summary:`
/// and the summary.
pub fn file_reference(
    file_id: &str,
    name: Option<&str>,
    mime: Option<&str>,
    bytes: u64,
    summary: &str,
) -> String {
    let name = name
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    let mime = mime
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    format!(
        "[LCM File: {file_id} | {name} | {mime} | {} bytes]\n\nExploration Summary:\n{}",
        group_thousands(bytes),
        summary_or_placeholder(summary)
    )
}

/// `[LCM Tool Output: file_… | tool=name | N bytes]`, the summary and a hint to call
/// `lcm_describe` with `expandFile`.
pub fn tool_output_reference(
    file_id: &str,
    tool: Option<&str>,
    bytes: u64,
    summary: &str,
) -> String {
    let tool = tool
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    format!(
        "[LCM Tool Output: {file_id} | tool={tool} | {} bytes]\n\nExploration Summary:\n{}\n\nCall lcm_describe(id=\"{file_id}\", expandFile=true) to read the full output.",
        group_thousands(bytes),
        summary_or_placeholder(summary)
    )
}

/// Whether a string is a file id (`file_` + 16 lower-case hex digits).
pub fn is_file_id(s: &str) -> bool {
    s.len() == 21
        && s.starts_with("file_")
        && text::tail(s, 5)
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_exactly_as_the_capturing_pattern_did() {
        let oracle = Regex::new(r"(?is)(<file\b[^>]*>)(.*?)(</file>)").unwrap();
        let cases = [
            "a <FILE name=\"x/y.rs\" mime='text/x-rust'>fn a(){}</File> b <file>z</file>",
            "<file></file><file\nname=a>\n\u{00e9}\u{2003}</FILE>",
            "<file name=\"a\">one</file> text <file name=\"b\">two </file >x</file>",
            "<file a=1>nested <file>inner</file> tail</file>",
            "no blocks <files>here</files> <file unterminated",
            "\u{1F600}<file n='\u{4E2D}'>\u{4E2D}\u{6587}</file>\u{1F600}",
        ];
        for text in cases {
            let want: Vec<_> = oracle
                .captures_iter(text)
                .map(|c| {
                    (
                        c.get(0).unwrap().start(),
                        c[1].to_owned(),
                        c[2].to_owned(),
                        c[3].to_owned(),
                    )
                })
                .collect();
            let got: Vec<_> = parse_file_blocks(text)
                .into_iter()
                .map(|b| {
                    (
                        b.start,
                        b.open.to_owned(),
                        b.body.to_owned(),
                        b.close.to_owned(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn blocks_keep_exact_tags_and_attributes() {
        let t = "a <FILE name=\"x/y.rs\" mime='text/x-rust'>fn a(){}</File> b <file>z</file>";
        let b = parse_file_blocks(t);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].open, "<FILE name=\"x/y.rs\" mime='text/x-rust'>");
        assert_eq!(b[0].close, "</File>");
        assert_eq!(b[0].body, "fn a(){}");
        assert_eq!(b[0].name.as_deref(), Some("x/y.rs"));
        assert_eq!(b[0].mime.as_deref(), Some("text/x-rust"));
        assert_eq!(
            &t[b[0].start..b[0].end],
            "<FILE name=\"x/y.rs\" mime='text/x-rust'>fn a(){}</File>"
        );
        assert_eq!(b[1].name, None);
        assert!(parse_file_blocks("<files>no</files>").is_empty());
    }

    #[test]
    fn extensions_are_sanitized() {
        assert_eq!(storage_extension(Some("a/b.TS"), None), "ts");
        assert_eq!(storage_extension(Some("../../etc/passwd"), None), "txt");
        assert_eq!(storage_extension(Some("x.tar/../../y"), None), "txt");
        assert_eq!(
            storage_extension(Some("a.verylongextension"), Some("text/csv")),
            "csv"
        );
        assert_eq!(storage_extension(Some(".bashrc"), None), "txt");
        assert_eq!(
            storage_extension(Some("a.j$on"), Some("application/json; charset=utf-8")),
            "json"
        );
        assert_eq!(storage_extension(None, None), "txt");
    }

    #[test]
    fn reference_formats() {
        let r = file_reference("file_0123456789abcdef", Some("a.json"), None, 1234567, "S");
        assert_eq!(
            r,
            "[LCM File: file_0123456789abcdef | a.json | unknown | 1,234,567 bytes]\n\nExploration Summary:\nS"
        );
        assert!(
            tool_output_reference("file_0123456789abcdef", Some("exec"), 12, "")
                .starts_with("[LCM Tool Output: file_0123456789abcdef | tool=exec | 12 bytes]")
        );
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert!(is_file_id("file_0123456789abcdef"));
        assert!(!is_file_id("file_0123456789abcdeg"));
    }
}
