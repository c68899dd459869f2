//! A progress bar on stderr for jobs over more than one item. It draws only when
//! stderr is a terminal and `--json` is off; otherwise every call is a no-op, so
//! callers use it unconditionally.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::Output;

/// A progress bar that may be hidden.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `total` items, shown when stderr is a terminal and `total > 1`.
    pub fn new(out: &Output, total: u64, message: &str) -> Progress {
        if !out.err_tty || total <= 1 {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] [{bar:30}] {pos}/{len} {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(message.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar: Some(bar) }
    }

    /// A bar that never draws.
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// Replaces the message beside the bar.
    pub fn set_message(&self, message: &str) {
        if let Some(b) = &self.bar {
            b.set_message(message.to_owned());
        }
    }

    /// Advances by one item.
    pub fn inc(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// Moves the bar to `pos` items.
    pub fn set_position(&self, pos: u64) {
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    /// Runs `f` with the bar cleared (for printing lines while it is shown).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
