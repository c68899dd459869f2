//! Output conventions of `lcm-tui`:
//!
//! - Results go to **stdout**; errors, warnings and progress go to **stderr**.
//! - `--json`: stdout holds exactly one JSON document (the result, or
//!   `{"error": {...}}` when the command fails); human text stays on stderr.
//! - Colour only when the stream is a terminal and `NO_COLOR` is unset (or forced
//!   with `--color always|never`).
//! - A closed stdout (`lcm-tui … | head`) ends output silently; a non-blocking
//!   descriptor (inherited from Node) is retried instead of failing.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

pub use crate::counts::{plural, signed_thousands, thousands};

use clap::ValueEnum;
use serde::Serialize;

use super::error::CliError;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorMode {
    /// Colour on terminals unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorMode {
    /// Whether to colour a stream that is (or is not) a terminal.
    pub fn enabled(self, is_tty: bool) -> bool {
        match self {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => {
                is_tty
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var("TERM").map(|t| t != "dumb").unwrap_or(true)
            }
        }
    }
}

/// A text style (ANSI SGR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Bold.
    Bold,
    /// Dim.
    Dim,
    /// Red.
    Red,
    /// Green.
    Green,
    /// Yellow.
    Yellow,
    /// Cyan.
    Cyan,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Red => "31",
            Style::Green => "32",
            Style::Yellow => "33",
            Style::Cyan => "36",
        }
    }
}

/// Wraps `text` in the style's escape codes when `color` is on.
pub fn paint(color: bool, style: Style, text: &str) -> String {
    if color && !text.is_empty() {
        format!("\x1b[{}m{text}\x1b[0m", style.sgr())
    } else {
        text.to_owned()
    }
}

/// A writer that retries `WouldBlock` / `Interrupted` (Node may leave a descriptor
/// non-blocking) and swallows output after the reader went away (`EPIPE`).
struct Resilient<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> Write for Resilient<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        loop {
            match self.inner.write(buf) {
                Ok(n) => return Ok(n),
                Err(e) => match e.kind() {
                    std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    std::io::ErrorKind::Interrupted => {}
                    std::io::ErrorKind::BrokenPipe => {
                        self.closed = true;
                        return Ok(buf.len());
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        loop {
            match self.inner.flush() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    self.closed = true;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Captured output of [`Output::capture`] (tests).
#[derive(Clone, Default)]
pub struct Captured {
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
}

impl Captured {
    /// Everything written to stdout so far.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().map(|v| v.clone()).unwrap_or_default())
            .into_owned()
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().map(|v| v.clone()).unwrap_or_default())
            .into_owned()
    }
}

struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where a command writes: stdout, stderr and what each supports.
pub struct Output {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    /// Colour on stdout.
    pub color: bool,
    /// Colour on stderr.
    pub color_err: bool,
    /// Whether stderr is a terminal (progress bars draw only then).
    pub err_tty: bool,
    /// Whether stdout is a terminal: stored text is then printed visible
    /// ([`Output::shown`]).
    pub out_tty: bool,
    /// `--json` is in effect: stdout is reserved for one JSON document.
    pub json: bool,
}

impl Output {
    /// The process's stdout and stderr.
    pub fn stdio(mode: ColorMode) -> Output {
        let out_tty = std::io::stdout().is_terminal();
        let err_tty = std::io::stderr().is_terminal();
        Output {
            out: Box::new(Resilient {
                inner: std::io::stdout(),
                closed: false,
            }),
            err: Box::new(Resilient {
                inner: std::io::stderr(),
                closed: false,
            }),
            color: mode.enabled(out_tty),
            color_err: mode.enabled(err_tty),
            err_tty,
            out_tty,
            json: false,
        }
    }

    /// In-memory streams (tests); `color` applies to both.
    pub fn capture(color: bool) -> (Output, Captured) {
        let c = Captured::default();
        let o = Output {
            out: Box::new(SharedBuf(c.out.clone())),
            err: Box::new(SharedBuf(c.err.clone())),
            color,
            color_err: color,
            err_tty: false,
            out_tty: false,
            json: false,
        };
        (o, c)
    }

    /// Writes text to stdout as is.
    pub fn write(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
    }

    /// Writes one line to stdout.
    pub fn line(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.write_all(b"\n");
    }

    /// Writes one line to stderr.
    pub fn eline(&mut self, text: &str) {
        let _ = self.err.write_all(text.as_bytes());
        let _ = self.err.write_all(b"\n");
        let _ = self.err.flush();
    }

    /// `warning: …` on stderr.
    pub fn warn(&mut self, text: &str) {
        let label = paint(self.color_err, Style::Yellow, "warning:");
        self.eline(&format!("{label} {text}"));
    }

    /// `error: …` on stderr.
    pub fn error(&mut self, e: &CliError) {
        let label = paint(self.color_err, Style::Red, "error:");
        self.eline(&format!("{label} {e}"));
    }

    /// Pretty-prints a JSON document on stdout.
    pub fn json<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CliError> {
        let text = serde_json::to_string_pretty(v)
            .map_err(|e| CliError::failure(format!("cannot serialize the result: {e}")))?;
        self.line(&text);
        Ok(())
    }

    /// Stored text (a summary, a message preview, a diff of them) as stdout should
    /// carry it: on a terminal its control characters shown rather than run
    /// ([`crate::cli::visible::visible_lines`]); elsewhere byte-exact.
    pub fn shown<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.out_tty {
            crate::cli::visible::visible_lines(text)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// One line of stored text cut to `max` with an ellipsis: on a terminal shown
    /// ([`Output::shown`]) and `max` terminal columns wide at most, cut between
    /// grapheme clusters ([`crate::cli::visible::clip`]); elsewhere its first `max`
    /// characters, byte-exact.
    pub fn shown_cut(&self, line: &str, max: usize) -> String {
        if self.out_tty {
            return crate::cli::visible::clip(line, max);
        }
        match line.chars().nth(max) {
            Some(_) => format!("{}…", crate::text::prefix_chars(line, max)),
            None => line.to_owned(),
        }
    }

    /// Styles text for stdout.
    pub fn paint(&self, style: Style, text: &str) -> String {
        paint(self.color, style, text)
    }

    /// Flushes both streams.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
        let _ = self.err.flush();
    }
}

/// Colours a unified diff line by line (headers bold, hunks cyan, `+` green, `-` red).
pub fn colorize_diff(diff: &str, color: bool) -> String {
    if !color {
        return diff.to_owned();
    }
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let style = if body.starts_with("+++") || body.starts_with("---") {
            Some(Style::Bold)
        } else if body.starts_with("@@") {
            Some(Style::Cyan)
        } else if body.starts_with('+') {
            Some(Style::Green)
        } else if body.starts_with('-') {
            Some(Style::Red)
        } else {
            None
        };
        match style {
            Some(s) => out.push_str(&paint(true, s, body)),
            None => out.push_str(body),
        }
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_colouring() {
        let d = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n";
        assert_eq!(colorize_diff(d, false), d);
        let c = colorize_diff(d, true);
        assert!(c.contains("\x1b[31m-old\x1b[0m\n"));
        assert!(c.contains("\x1b[32m+new\x1b[0m\n"));
        assert!(c.contains("\x1b[36m@@ -1 +1 @@\x1b[0m"));
        assert!(c.ends_with(" same\n"));
    }

    #[test]
    fn colour_modes() {
        assert!(ColorMode::Always.enabled(false));
        assert!(!ColorMode::Never.enabled(true));
        assert!(!ColorMode::Auto.enabled(false));
    }
}
