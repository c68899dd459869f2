//! Keys as the browser's state machines see them (no terminal types), mapped from
//! crossterm's key events.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character (Shift already applied: `J`, `W`, `A`).
    Char(char),
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Tab.
    Tab,
    /// Backspace.
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
    /// Ctrl-C: quit from anywhere (cancelling what is in flight).
    Interrupt,
}

/// The keys of a crossterm event: none for releases and keys the browser ignores;
/// two for Alt+char, which is how a terminal delivers Esc quickly followed by a key
/// (the browser has no Alt bindings).
pub fn from_event(ev: KeyEvent) -> Vec<Key> {
    if ev.kind == KeyEventKind::Release {
        return Vec::new();
    }
    if ev.modifiers.contains(KeyModifiers::ALT) {
        if let KeyCode::Char(c) = ev.code {
            return vec![Key::Esc, Key::Char(c)];
        }
    }
    one(ev).into_iter().collect()
}

fn one(ev: KeyEvent) -> Option<Key> {
    if ev.modifiers.contains(KeyModifiers::CONTROL) {
        return match ev.code {
            KeyCode::Char('c') | KeyCode::Char('q') => Some(Key::Interrupt),
            _ => None,
        };
    }
    Some(match ev.code {
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Tab => Key::Tab,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}
