use super::*;

fn vars(depth: i64, prev: Option<&str>) -> PromptVars {
    PromptVars {
        target_tokens: 777,
        previous_context: prev.map(str::to_owned),
        child_count: 3,
        time_range: Some("2026-02-17 15:37–17:21 UTC".into()),
        depth,
        source_text: "[2026-02-17 15:37 UTC] [user]\nDeploy v2.3.1 to staging.".into(),
        custom_instructions: None,
        aggressive: false,
    }
}

#[test]
fn depth_dispatch() {
    let names: Vec<&str> = [-1, 0, 1, 2, 3, 4, 40]
        .iter()
        .map(|d| PromptKind::for_depth(*d).name())
        .collect();
    assert_eq!(
        names,
        [
            "leaf",
            "leaf",
            "condensed-d1",
            "condensed-d2",
            "condensed-d3",
            "condensed-d3",
            "condensed-d3"
        ]
    );
}

#[test]
fn every_depth_renders_the_required_structure() {
    let set = PromptSet::embedded().unwrap();
    for depth in 0..=4 {
        for prev in [None, Some("PREVIOUS SUMMARY TEXT")] {
            let p = set.render(&vars(depth, prev)).unwrap();
            let (open, close) = if depth == 0 {
                ("<conversation_segment>", "</conversation_segment>")
            } else {
                ("<conversation_to_condense>", "</conversation_to_condense>")
            };
            let body = format!(
                "{open}\n[2026-02-17 15:37 UTC] [user]\nDeploy v2.3.1 to staging.\n{close}"
            );
            assert!(p.ends_with(&body), "depth {depth}: {p}");
            assert!(p.contains("Expand for details about:"), "{p}");
            assert!(p.contains("Target length: about 777 tokens"), "{p}");
            assert!(p.contains("untrusted data"), "{p}");
            assert!(!p.contains("\n\n\n"), "{p}");
            assert!(!p.contains("OpenClaw"), "domain-agnostic: {p}");
            let with_prev = prev.is_some() && depth <= 1;
            assert_eq!(
                p.contains("<previous_context>\nPREVIOUS SUMMARY TEXT\n</previous_context>"),
                with_prev,
                "depth {depth}"
            );
            assert_eq!(p.contains("<previous_context>"), with_prev, "depth {depth}");
            assert!(!p.contains("Operator instructions"), "{p}");
        }
    }
}

#[test]
fn aggressive_and_custom_instructions() {
    let set = PromptSet::embedded().unwrap();
    let mut v = vars(0, None);
    let normal = set.render(&v).unwrap();
    v.aggressive = true;
    v.custom_instructions = Some("  Keep ticket numbers.  ".into());
    let aggr = set.render(&v).unwrap();
    assert!(normal.contains("Summary policy:") && !normal.contains("strict"));
    assert!(aggr.contains("strict: a previous attempt was too long"));
    assert!(aggr.contains("about 777 tokens or less"));
    assert!(aggr.contains("Operator instructions:\nKeep ticket numbers.\n"));
    for depth in 1..=3 {
        let mut v = vars(depth, None);
        v.custom_instructions = Some("Use British spelling.".into());
        assert!(set
            .render(&v)
            .unwrap()
            .contains("Operator instructions:\nUse British spelling."));
    }
}

#[test]
fn full_render_names_template_and_source() {
    let set = PromptSet::embedded().unwrap();
    let r = set.render_full(&vars(2, None)).unwrap();
    assert_eq!(r.template, "condensed-d2");
    assert_eq!(r.source, "embedded");
    assert_eq!(r.system_prompt, SYSTEM_PROMPT);
    assert!(set
        .sources()
        .iter()
        .all(|(_, o)| *o == PromptOrigin::Embedded));
}

#[test]
fn an_override_changes_only_its_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("condensed-d2.jinja"),
        "CUSTOM d{{ depth }} n={{ child_count }} t={{ target_tokens }}\n{% if previous_context %}P{% endif %}\n<x>{{ source_text }}</x>\n",
    )
    .unwrap();
    let set = PromptSet::load(Some(dir.path())).unwrap();
    let embedded = PromptSet::embedded().unwrap();
    let p = set.render(&vars(2, None)).unwrap();
    assert_eq!(
        p,
        "CUSTOM d2 n=3 t=777\n<x>[2026-02-17 15:37 UTC] [user]\nDeploy v2.3.1 to staging.</x>"
    );
    for depth in [0, 1, 3] {
        assert_eq!(
            set.render(&vars(depth, None)).unwrap(),
            embedded.render(&vars(depth, None)).unwrap()
        );
    }
    let src = set.render_full(&vars(2, None)).unwrap().source;
    assert!(src.ends_with("condensed-d2.jinja"), "{src}");
}

#[test]
fn go_tmpl_overrides_are_translated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("leaf.tmpl"),
        "Go {{.TargetTokens}}\n{{if .PreviousContext -}}\nprev={{.PreviousContext}}\n{{end -}}\nsrc={{.SourceText}}\n",
    )
    .unwrap();
    let set = PromptSet::load(Some(dir.path())).unwrap();
    assert_eq!(
        set.render(&vars(0, Some("old"))).unwrap(),
        "Go 777\nprev=old\nsrc=[2026-02-17 15:37 UTC] [user]\nDeploy v2.3.1 to staging."
    );
    assert!(set
        .render(&vars(0, None))
        .unwrap()
        .starts_with("Go 777\nsrc="));
    // A .jinja file wins over a .tmpl of the same name.
    std::fs::write(dir.path().join("leaf.jinja"), "J {{ source_text }}").unwrap();
    let set = PromptSet::load(Some(dir.path())).unwrap();
    assert!(set.render(&vars(0, None)).unwrap().starts_with("J ["));
}

#[test]
fn broken_overrides_fail_at_load_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("condensed-d1.jinja");
    std::fs::write(
        &path,
        "line one\nline two\n{% if previous_context %}\nno end\n",
    )
    .unwrap();
    let e = PromptSet::load(Some(dir.path())).unwrap_err();
    assert_eq!(e.code, ErrorCode::Template);
    assert!(
        e.message.contains(&path.display().to_string()),
        "{}",
        e.message
    );
    assert!(e.message.contains("line "), "{}", e.message);

    // Parses, but fails to render: an unknown variable is caught by the sample render.
    std::fs::write(&path, "ok\n{{ target_tokenz }}\n").unwrap();
    let e = PromptSet::load(Some(dir.path())).unwrap_err();
    assert_eq!(e.code, ErrorCode::Template);
    assert!(e.message.contains("line 2"), "{}", e.message);
    assert!(e.message.contains("undefined"), "{}", e.message);

    // Only fails on one branch (aggressive): still caught at load.
    std::fs::remove_file(&path).unwrap();
    let leaf = dir.path().join("leaf.jinja");
    std::fs::write(&leaf, "a\nb\n{% if aggressive %}{{ 1 / 0 }}{% endif %}\n").unwrap();
    let e = PromptSet::load(Some(dir.path())).unwrap_err();
    assert!(e.message.contains("leaf.jinja line 3"), "{}", e.message);

    std::fs::remove_file(&leaf).unwrap();
    let tmpl = dir.path().join("leaf.tmpl");
    std::fs::write(&tmpl, "x\n{{.Bogus}}").unwrap();
    let e = PromptSet::load(Some(dir.path())).unwrap_err();
    assert_eq!(e.code, ErrorCode::Template);
    assert!(
        e.message.contains("leaf.tmpl line 2") && e.message.contains(".Bogus"),
        "{}",
        e.message
    );
}

#[test]
fn missing_directory_means_embedded() {
    let set = PromptSet::load(Some(Path::new("/nonexistent/lcm/prompts"))).unwrap();
    assert!(set
        .sources()
        .iter()
        .all(|(_, o)| *o == PromptOrigin::Embedded));
}

mod blank_runs {
    use super::super::collapse_blank_runs;
    use proptest::prelude::*;

    /// The rule as a regex: the oracle the one-pass scanner must agree with.
    fn oracle(s: &str) -> String {
        regex::Regex::new(r"\n[ \t]*\n(?:[ \t]*\n)+")
            .unwrap()
            .replace_all(s, "\n\n")
            .into_owned()
    }

    #[test]
    fn runs_of_blank_lines_become_one() {
        assert_eq!(collapse_blank_runs("a\n\nb"), "a\n\nb");
        assert_eq!(collapse_blank_runs("a\n\n\nb"), "a\n\nb");
        assert_eq!(collapse_blank_runs("a\n \t\n  \n\t\nb \n"), "a\n\nb \n");
        assert_eq!(collapse_blank_runs("\n\n\n"), "\n\n");
        assert_eq!(collapse_blank_runs("a\n \n x\n\n\n"), "a\n \n x\n\n");
        assert!(matches!(
            collapse_blank_runs("no runs\n\nhere"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::sample::select(&["\n", " ", "\t", "a", "\r", "漢", "\u{3000}", "\u{a0}"][..])
                .prop_map(str::to_owned),
            1 => crate::text::strategies::piece(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn agrees_with_the_regex(parts in proptest::collection::vec(piece(), 0..40)) {
            let s = parts.concat();
            prop_assert_eq!(collapse_blank_runs(&s).into_owned(), oracle(&s));
        }
    }
}
