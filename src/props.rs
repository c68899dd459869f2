//! Property tests over hostile Unicode (every Unicode whitespace, combining marks,
//! ZWJ emoji, RTL text, NUL, template / FTS / regex syntax) for every function that
//! cuts or rewrites text at computed positions: no panic, valid output, and each
//! function's documented property. Case counts stay moderate (the suite runs on
//! two shared cores).

use proptest::prelude::*;
use serde_json::json;

use crate::assembler::xml::{escape_attr, escape_text};
use crate::cli::visible;
use crate::largefiles::{blocks, explore, restore};
use crate::prompts::gotmpl;
use crate::summarize::{fallback, normalize, offline};
use crate::text::strategies::text;
use crate::tokens::{estimate, truncate_to_tokens};

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn token_truncation_is_a_prefix_within_the_cap(s in text(60), cap in 0i64..40) {
        let t = truncate_to_tokens(&s, cap);
        prop_assert!(s.starts_with(t));
        prop_assert!(estimate(t) <= cap, "{t:?} over {cap}");
        if estimate(&s) <= cap {
            prop_assert_eq!(t, s.as_str());
        }
    }

    #[test]
    fn the_browser_draws_no_control_character_and_keeps_its_columns(s in text(40), cols in 0usize..30) {
        let v = visible::visible(&s);
        prop_assert!(!v.chars().any(char::is_control), "{v:?}");
        if !s.chars().any(char::is_control) {
            prop_assert_eq!(v.as_ref(), s.as_str());
        }
        let c = visible::clip(&s, cols);
        prop_assert!(!c.chars().any(char::is_control), "{c:?}");
        prop_assert!(visible::columns(&c) <= cols, "{c:?} over {cols}");
        if visible::columns(&v) <= cols {
            prop_assert_eq!(&c, v.as_ref());
        } else if cols > 0 {
            prop_assert!(c.ends_with('…'), "{c:?}");
        }
        prop_assert_eq!(visible::columns(&visible::fit(&s, cols)), cols);
    }

    #[test]
    fn a_source_message_preview_is_a_prefix_and_names_the_rest(s in text(40), copies in 1usize..800) {
        let long = s.repeat(copies);
        let p = crate::cli::tui::source_preview(&long);
        match p.split_once("\n… ") {
            Some((head, note)) if p != long => {
                prop_assert!(long.starts_with(head));
                prop_assert!(head.chars().count() <= 20_000 && head.lines().count() <= 200);
                let rest = long[head.len()..].strip_prefix('\n').unwrap_or(&long[head.len()..]);
                let chars = crate::cli::output::thousands(rest.chars().count() as i64);
                prop_assert!(note.starts_with(&format!("{chars} more characters (")), "{note}");
            }
            _ => prop_assert_eq!(p.as_ref(), long.as_str()),
        }
    }

    #[test]
    fn xml_escaping_round_trips(s in text(40)) {
        let t = escape_text(&s);
        prop_assert!(!t.contains('<') && !t.contains('>'));
        prop_assert_eq!(unescape(&t), s.clone());
        let a = escape_attr(&s);
        prop_assert!(!a.contains('"') && !a.contains('<'));
        prop_assert_eq!(unescape(&a), s);
    }

    #[test]
    fn capped_summaries_stay_within_their_cap(s in text(80), max in 0i64..60) {
        let out = fallback::cap(&s, estimate(&s), max);
        prop_assert!(estimate(&out) <= max.max(0), "{out:?} over {max}");
        let f = fallback::truncation_fallback(&s, estimate(&s), max);
        prop_assert!(f.ends_with(&fallback::truncation_marker(estimate(&s))));
        let (clean, found) = fallback::sanitize_directives(&s);
        if !found {
            // Sentence splitting keeps every byte.
            prop_assert_eq!(clean, s);
        }
    }

    #[test]
    fn the_offline_summarizer_takes_any_text(s in text(80), target in 1i64..200, depth in 0i64..3) {
        let src = format!("[2026-01-01 10:00 UTC] user: {s}\n\n[2026-01-01 10:01 UTC] assistant: {s}. Done! {s}");
        let _ = offline::summarize_text(&src, target, depth, false);
        let _ = offline::summarize_text(&s, target, depth, true);
    }

    #[test]
    fn reasoning_stripping_takes_any_text(s in text(40), tag in prop::sample::select(vec!["think", "thinking", "reasoning", "THINK"])) {
        let plain = s.replace('<', "");
        prop_assert_eq!(normalize::strip_reasoning(&plain), plain.trim());
        let wrapped = format!("<{tag}>{s}</{tag}>{s}");
        let _ = normalize::strip_reasoning(&wrapped);
        let _ = normalize::strip_reasoning(&format!("<{tag}>{s}"));
    }

    #[test]
    fn exploration_summaries_take_any_text(s in text(80), name in text(6), max in 0usize..50) {
        for n in [None, Some("data.json"), Some("table.csv"), Some("x.rs"), Some(name.as_str())] {
            let _ = explore::summarize(&s, n, None);
        }
        let line = explore::one_line(&s, max);
        prop_assert!(line.chars().count() <= max + 3);
        if let Some(ext) = blocks::name_extension(&name) {
            prop_assert!(ext.len() <= 10 && ext.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        prop_assert!(!blocks::is_file_id(&name) || name.starts_with("file_"));
    }

    #[test]
    fn go_template_translation_takes_any_text(s in text(40), field in text(4)) {
        let _ = gotmpl::translate(&s);
        let _ = gotmpl::translate(&format!("{s}{{{{ .{field} }}}}{s}{{{{- if {field} -}}}}{s}{{{{end}}}}"));
    }

    #[test]
    fn lone_surrogates_become_replacement_characters(
        parts in prop::collection::vec((text(6), prop::sample::select(vec!["\\ud800", "\\udfff", "\\uDBFF", "\\ud83d\\ude00", "\\u00e9", "\\\\ud800"])), 0..8),
    ) {
        let mut body = String::new();
        for (t, esc) in &parts {
            body.push_str(serde_json::to_string(t).unwrap().trim_matches('"'));
            body.push_str(esc);
        }
        let doc = format!("{{\"content\":\"{body}\"}}");
        let repaired = crate::params::repair_lone_surrogates(&doc);
        let v: serde_json::Value = serde_json::from_str(&repaired).expect("repaired JSON parses");
        prop_assert!(v["content"].is_string());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Externalized `<file>` blocks of any text come back byte-exact.
    #[test]
    fn large_files_round_trip_any_text(pre in text(20), body in text(30), post in text(20)) {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::largefiles::intercept::Settings { threshold: 20, dir: dir.path().to_path_buf() };
        let big = body.repeat(1 + 200 / (body.len() + 1));
        let original = json!({"role": "user", "content": [
            {"type": "text", "text": format!("{pre}<file name=\"{post}.txt\">{big}</file>{post}")},
            {"type": "text", "text": format!("{pre}[LCM File: {post}")},
        ]});
        let mut msgs = vec![original.clone()];
        let session = crate::store::conversations::SessionRef { session_id: "s".into(), session_key: None };
        crate::largefiles::intercept::intercept_batch(&mut conn, &session, &mut msgs, &settings).unwrap();
        let mut r = restore::Restorer::load(&conn, 1, dir.path().to_path_buf()).unwrap();
        r.restore(&mut msgs[0]);
        prop_assert_eq!(msgs[0].to_string(), original.to_string());
    }
}
