//! Translation of lcm-tui's Go `text/template` prompt files (`*.tmpl`) to minijinja,
//! so operators can reuse their overrides. Supported: field output (`{{.TargetTokens}}`),
//! `if` / `else if` / `else` / `end`, the functions `not`, `and`, `or`, `eq`, `ne`,
//! `lt`, `le`, `gt`, `ge` over fields and literals, comments, and `{{-` / `-}}`
//! whitespace trimming (same meaning in both languages). Anything else (`range`,
//! `with`, `define`, pipelines) is reported with its line. Newlines are preserved, so
//! line numbers of later render errors still point into the original file.

use crate::text;

/// The Go field names of `PromptVars` and their template variable names.
const FIELDS: [(&str, &str); 8] = [
    ("TargetTokens", "target_tokens"),
    ("PreviousContext", "previous_context"),
    ("ChildCount", "child_count"),
    ("TimeRange", "time_range"),
    ("Depth", "depth"),
    ("SourceText", "source_text"),
    ("CustomInstructions", "custom_instructions"),
    ("Aggressive", "aggressive"),
];

/// A translation failure: 1-based line and message.
pub type TranslateError = (usize, String);

fn line_of(src: &str, byte: usize) -> usize {
    text::head(src, byte).matches('\n').count() + 1
}

/// Translates a Go template to minijinja source.
pub fn translate(src: &str) -> Result<String, TranslateError> {
    let mut out = String::with_capacity(src.len() + 64);
    let mut stack: Vec<&'static str> = Vec::new();
    let mut pos = 0;
    while let Some(rel) = text::tail(src, pos).find("{{") {
        let start = pos + rel;
        push_text(&mut out, text::slice(src, pos, start));
        let line = line_of(src, start);
        let (action, end) = read_action(src, start).map_err(|m| (line, m))?;
        emit_action(&mut out, &action, &mut stack).map_err(|m| (line, m))?;
        pos = end;
    }
    push_text(&mut out, text::tail(src, pos));
    if let Some(open) = stack.last() {
        return Err((
            line_of(src, src.len()),
            format!("unexpected end of template: {{{{{open}}}}} is not closed by {{{{end}}}}"),
        ));
    }
    Ok(out)
}

/// Literal text; Jinja delimiters that Go treats as text are escaped.
fn push_text(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(i) = rest.find(['{', '#', '%']) {
        out.push_str(text::head(rest, i));
        let tail = text::tail(rest, i);
        if tail.starts_with("{%") || tail.starts_with("{#") {
            out.push_str(&format!("{{{{ \"{}\" }}}}", text::head(tail, 2)));
            rest = text::tail(tail, 2);
        } else {
            let c = tail.chars().next().expect("non-empty");
            out.push(c);
            rest = text::tail(tail, c.len_utf8());
        }
    }
    out.push_str(rest);
}

/// One `{{ … }}` action.
struct Action {
    trim_left: bool,
    trim_right: bool,
    body: String,
    comment: bool,
}

fn read_action(src: &str, start: usize) -> Result<(Action, usize), String> {
    let mut i = start + 2;
    let trim_left = text::tail(src, i).starts_with("- ") || text::tail(src, i).starts_with("-\n");
    if trim_left {
        i += 2;
    }
    let inner = text::tail(src, i).trim_start();
    if inner.starts_with("/*") {
        let close = text::tail(src, i)
            .find("*/")
            .ok_or_else(|| "unclosed comment".to_owned())?;
        let after = i + close + 2;
        let rest = text::tail(src, after);
        let (trim_right, skip) = if let Some(r) = rest.strip_prefix(" -}}") {
            (true, rest.len() - r.len())
        } else if rest.starts_with("}}") {
            (false, 2)
        } else {
            return Err("comment must end with */}}".into());
        };
        let body: String = text::slice(src, i, after)
            .chars()
            .filter(|c| *c == '\n')
            .collect();
        let a = Action {
            trim_left,
            trim_right,
            body,
            comment: true,
        };
        return Ok((a, after + skip));
    }
    let close = text::tail(src, i)
        .find("}}")
        .ok_or_else(|| "unclosed action: missing }}".to_owned())?;
    let mut body = text::slice(src, i, i + close);
    let trim_right = body.ends_with(" -") || body.ends_with("\n-");
    if trim_right {
        body = text::head(body, body.len() - 2);
    }
    let a = Action {
        trim_left,
        trim_right,
        body: body.trim().to_owned(),
        comment: false,
    };
    Ok((a, i + close + 2))
}

fn emit_action(out: &mut String, a: &Action, stack: &mut Vec<&'static str>) -> Result<(), String> {
    let (l, r) = (
        if a.trim_left { "-" } else { "" },
        if a.trim_right { "-" } else { "" },
    );
    if a.comment {
        out.push_str(&format!("{{#{l}{}{r}#}}", a.body));
        return Ok(());
    }
    let body = a.body.as_str();
    let newlines = "\n".repeat(body.matches('\n').count());
    let (keyword, rest) = split_keyword(body);
    let tag = match keyword {
        "if" => {
            stack.push("if");
            format!("if {}", expr(rest)?)
        }
        "else" if rest.starts_with("if ") => {
            expect_open(stack, "else if")?;
            format!("elif {}", expr(text::tail(rest, 3).trim())?)
        }
        "else" if rest.is_empty() => {
            expect_open(stack, "else")?;
            "else".to_owned()
        }
        "end" if rest.is_empty() => {
            expect_open(stack, "end")?;
            stack.pop();
            "endif".to_owned()
        }
        "range" | "with" | "define" | "template" | "block" | "break" | "continue" => {
            return Err(format!(
                "{{{{{keyword}}}}} is not supported in .tmpl prompt overrides; use a .jinja file"
            ))
        }
        _ => {
            out.push_str(&format!("{{{{{l} {} {r}}}}}{newlines}", expr(body)?));
            return Ok(());
        }
    };
    out.push_str(&format!("{{%{l} {tag} {r}%}}{newlines}"));
    Ok(())
}

fn expect_open(stack: &[&str], what: &str) -> Result<(), String> {
    if stack.is_empty() {
        return Err(format!("{{{{{what}}}}} without a matching {{{{if}}}}"));
    }
    Ok(())
}

fn split_keyword(body: &str) -> (&str, &str) {
    match body.find(char::is_whitespace) {
        Some(i) => (text::head(body, i), text::tail(body, i).trim()),
        None => (body, ""),
    }
}

/// Splits on whitespace outside double-quoted strings.
fn tokens(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_str = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                cur.push(c);
                in_str = !in_str;
            }
            '\\' if in_str => {
                cur.push(c);
                cur.extend(chars.next());
            }
            c if c.is_whitespace() && !in_str => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if in_str {
        return Err("unterminated string literal".into());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

fn operand(tok: &str) -> Result<String, String> {
    if let Some(field) = tok.strip_prefix('.') {
        return FIELDS
            .iter()
            .find(|(go, _)| *go == field)
            .map(|(_, j)| (*j).to_owned())
            .ok_or_else(|| {
                let known: Vec<String> = FIELDS.iter().map(|(g, _)| format!(".{g}")).collect();
                format!("unknown field .{field} (known: {})", known.join(", "))
            });
    }
    let literal = tok.starts_with('"')
        || tok.parse::<i64>().is_ok()
        || tok.parse::<f64>().is_ok()
        || tok == "true"
        || tok == "false";
    if literal {
        return Ok(tok.to_owned());
    }
    Err(format!(
        "unsupported operand {tok:?} in a .tmpl override (fields, numbers, strings, true/false)"
    ))
}

/// A Go pipeline of the supported shape as a Jinja expression.
fn expr(s: &str) -> Result<String, String> {
    let toks = tokens(s)?;
    let Some(head) = toks.first() else {
        return Err("empty action".into());
    };
    let args = || -> Result<Vec<String>, String> { toks[1..].iter().map(|t| operand(t)).collect() };
    let binary = |op: &str| -> Result<String, String> {
        let a = args()?;
        if a.len() != 2 {
            return Err(format!("{head} needs two arguments"));
        }
        Ok(format!("({} {op} {})", a[0], a[1]))
    };
    match head.as_str() {
        "not" => {
            let a = args()?;
            if a.len() != 1 {
                return Err("not needs one argument".into());
            }
            Ok(format!("(not {})", a[0]))
        }
        "and" | "or" => {
            let a = args()?;
            if a.len() < 2 {
                return Err(format!("{head} needs at least two arguments"));
            }
            Ok(format!("({})", a.join(&format!(" {head} "))))
        }
        "eq" => binary("=="),
        "ne" => binary("!="),
        "lt" => binary("<"),
        "le" => binary("<="),
        "gt" => binary(">"),
        "ge" => binary(">="),
        _ if toks.len() == 1 => operand(head),
        _ => Err(format!("unsupported action {s:?} in a .tmpl override")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_fields_conditionals_and_trimming() {
        let go = "A {{.TargetTokens}}\n{{if .PreviousContext -}}\nP={{.PreviousContext}}\n{{- else -}}\nnone\n{{end}}\n{{/* note */}}x";
        let j = translate(go).unwrap();
        assert_eq!(
            j,
            "A {{ target_tokens }}\n{% if previous_context -%}\nP={{ previous_context }}\n{%- else -%}\nnone\n{% endif %}\n{##}x"
        );
        let j = translate("{{if and .Aggressive (eq .Depth 0)}}").unwrap_err();
        assert!(j.1.contains("unsupported operand"), "{j:?}");
        assert_eq!(
            translate("{{if eq .Depth 0}}z{{else if gt .Depth 2}}y{{end}}").unwrap(),
            "{% if (depth == 0) %}z{% elif (depth > 2) %}y{% endif %}"
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = translate("ok\nok\n{{.Nope}}").unwrap_err();
        assert_eq!(e.0, 3);
        assert!(e.1.contains(".Nope") && e.1.contains(".TargetTokens"));
        assert_eq!(translate("{{if .Depth}}\nx").unwrap_err().0, 2);
        assert!(translate("x\n{{range .SourceText}}{{end}}")
            .unwrap_err()
            .1
            .contains("range"));
        assert_eq!(translate("a\n{{end}}").unwrap_err().0, 2);
        assert_eq!(translate("a {{.Depth").unwrap_err().0, 1);
    }

    #[test]
    fn jinja_delimiters_in_text_stay_literal() {
        let j = translate("50% {% raw {# x").unwrap();
        let env = minijinja::Environment::new();
        assert_eq!(env.render_str(&j, ()).unwrap(), "50% {% raw {# x");
    }
}
