//! The key bindings, as data. The footer and the help overlay are both drawn from
//! [`BINDINGS`], so a key is described in exactly one place.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the teacher asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    TogglePause,
    Step,
    /// Lessons: one step back (reseed and replay the earlier steps).
    StepBack,
    NextWorker,
    PrevWorker,
    SelectWorker(usize),
    Crash,
    Restart,
    /// Start one more worker thread.
    AddWorker,
    /// Stop the last worker thread.
    RemoveWorker,
    AdvanceStep,
    AdvanceLease,
    Faster,
    Slower,
    ToggleLeasing,
    /// Switch lease heartbeats on or off for every worker.
    ToggleHeartbeats,
    AddPayment,
    /// Put every dead-lettered message back to Pending with fresh attempts.
    Redrive,
    Reset,
    FocusNext,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// The message under the table's cursor: its own history from the ledger.
    History,
    /// Give the terminal back to the shell and stop, as a shell's Ctrl-Z does.
    Suspend,
}

/// A key as a binding names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    /// Any of `1`..=`9`: selects worker N.
    Digit,
    Code(KeyCode),
}

impl Key {
    fn matches(self, ev: &KeyEvent) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        match (self, ev.code) {
            (Key::Ctrl(c), KeyCode::Char(k)) => ctrl && k.eq_ignore_ascii_case(&c),
            (Key::Char(c), KeyCode::Char(k)) => !ctrl && !alt && k == c,
            (Key::Digit, KeyCode::Char(k)) => !ctrl && !alt && ('1'..='9').contains(&k),
            (Key::Code(c), code) => c == code,
            _ => false,
        }
    }
}

/// Where a binding belongs in the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Clock,
    Workers,
    Outbox,
    View,
}

impl Section {
    pub const ALL: [Section; 4] = [
        Section::Clock,
        Section::Workers,
        Section::Outbox,
        Section::View,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Section::Clock => "Clock",
            Section::Workers => "Workers",
            Section::Outbox => "Outbox and leasing",
            Section::View => "View",
        }
    }
}

pub struct Binding {
    pub keys: &'static [Key],
    /// How the keys are written on screen.
    pub label: &'static str,
    /// One or two words for the footer; empty keeps it out of the footer.
    pub hint: &'static str,
    /// One line for the help overlay.
    pub help: &'static str,
    pub section: Section,
    pub action: Action,
}

/// Every binding, in footer order (the footer drops the last ones first when narrow).
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[Key::Char('q'), Key::Ctrl('c')],
        label: "q",
        hint: "quit",
        help: "quit (Ctrl-C too): workers stop, temporary database removed",
        section: Section::View,
        action: Action::Quit,
    },
    Binding {
        keys: &[Key::Char('?')],
        label: "?",
        hint: "help",
        help: "show or hide this help",
        section: Section::View,
        action: Action::Help,
    },
    Binding {
        keys: &[Key::Char(' ')],
        label: "space",
        hint: "pause",
        help: "pause / resume: the clock and every worker stop",
        section: Section::Clock,
        action: Action::TogglePause,
    },
    Binding {
        keys: &[Key::Char('n')],
        label: "n",
        hint: "step",
        help: "while paused: one step (a story step, or one worker action)",
        section: Section::Clock,
        action: Action::Step,
    },
    Binding {
        keys: &[Key::Char('b')],
        label: "b",
        hint: "back",
        help: "lesson: one step back (the outbox is reseeded and the earlier steps replayed)",
        section: Section::Clock,
        action: Action::StepBack,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Tab)],
        label: "tab",
        hint: "worker",
        help: "select the next worker (Shift-Tab: previous; 1-9: worker N)",
        section: Section::Workers,
        action: Action::NextWorker,
    },
    Binding {
        keys: &[Key::Code(KeyCode::BackTab)],
        label: "S-tab",
        hint: "",
        help: "select the previous worker",
        section: Section::Workers,
        action: Action::PrevWorker,
    },
    Binding {
        keys: &[Key::Digit],
        label: "1-9",
        hint: "",
        help: "select worker 1 to 9 (at a lesson's question: the class's prediction)",
        section: Section::Workers,
        action: Action::SelectWorker(0),
    },
    Binding {
        keys: &[Key::Char('c')],
        label: "c",
        hint: "crash",
        help: "crash the selected worker: it stops at once and keeps its lease",
        section: Section::Workers,
        action: Action::Crash,
    },
    Binding {
        keys: &[Key::Char('r')],
        label: "r",
        hint: "restart",
        help: "restart the selected worker as a new incarnation (Worker-A#2)",
        section: Section::Workers,
        action: Action::Restart,
    },
    Binding {
        keys: &[Key::Char('w')],
        label: "w / W",
        hint: "",
        help: "add a worker thread / stop the last one (the strip shows msg/s)",
        section: Section::Workers,
        action: Action::AddWorker,
    },
    Binding {
        keys: &[Key::Char('W')],
        label: "W",
        hint: "",
        help: "stop the last worker; a lease it held runs out",
        section: Section::Workers,
        action: Action::RemoveWorker,
    },
    Binding {
        keys: &[Key::Char('a')],
        label: "a",
        hint: "advance",
        help: "advance the clock by a small step",
        section: Section::Clock,
        action: Action::AdvanceStep,
    },
    Binding {
        keys: &[Key::Char('A')],
        label: "A",
        hint: "+lease",
        help: "advance the clock by one full lease",
        section: Section::Clock,
        action: Action::AdvanceLease,
    },
    Binding {
        keys: &[Key::Char('l')],
        label: "l",
        hint: "leasing",
        help: "switch leasing on / off (workers change at their next cycle)",
        section: Section::Outbox,
        action: Action::ToggleLeasing,
    },
    Binding {
        keys: &[Key::Char('h')],
        label: "h",
        hint: "",
        help: "switch heartbeats on / off: a working worker extends its lease every interval",
        section: Section::Outbox,
        action: Action::ToggleHeartbeats,
    },
    Binding {
        keys: &[Key::Char('R')],
        label: "R",
        hint: "reset",
        help: "reset: reseed the outbox, restart the workers, keep the settings",
        section: Section::Outbox,
        action: Action::Reset,
    },
    Binding {
        keys: &[Key::Char('p')],
        label: "p",
        hint: "payment",
        help: "add a payment and its outbox row, in one transaction",
        section: Section::Outbox,
        action: Action::AddPayment,
    },
    Binding {
        keys: &[Key::Char('D')],
        label: "D",
        hint: "",
        help: "redrive: every dead-lettered message back to Pending with fresh attempts",
        section: Section::Outbox,
        action: Action::Redrive,
    },
    Binding {
        keys: &[Key::Char('+'), Key::Char('=')],
        label: "+/-",
        hint: "speed",
        help: "clock faster / slower (0.25x to 32x)",
        section: Section::Clock,
        action: Action::Faster,
    },
    Binding {
        keys: &[Key::Char('-'), Key::Char('_')],
        label: "-",
        hint: "",
        help: "clock slower",
        section: Section::Clock,
        action: Action::Slower,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Left), Key::Code(KeyCode::Right)],
        label: "←/→",
        hint: "focus",
        help: "move the focus between the messages table and the event log",
        section: Section::View,
        action: Action::FocusNext,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Up), Key::Char('k')],
        label: "↑/↓ j/k",
        hint: "row",
        help: "move the table's row cursor, or scroll the log, by a line",
        section: Section::View,
        action: Action::ScrollUp,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Down), Key::Char('j')],
        label: "↓",
        hint: "",
        help: "scroll down by a line",
        section: Section::View,
        action: Action::ScrollDown,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Enter)],
        label: "⏎",
        hint: "history",
        help: "Enter: the cursor row's history from the ledger; j/k move on",
        section: Section::View,
        action: Action::History,
    },
    Binding {
        keys: &[Key::Code(KeyCode::PageUp)],
        label: "PgUp/PgDn",
        hint: "",
        help: "page the focused pane, or a lesson's narration too long to fit",
        section: Section::View,
        action: Action::PageUp,
    },
    Binding {
        keys: &[Key::Code(KeyCode::PageDown)],
        label: "PgDn",
        hint: "",
        help: "scroll down by a page",
        section: Section::View,
        action: Action::PageDown,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Home), Key::Char('g')],
        label: "Home/End",
        hint: "",
        help: "g/G too: top (table follows the work again) / end (log follows)",
        section: Section::View,
        action: Action::Top,
    },
    Binding {
        keys: &[Key::Code(KeyCode::End), Key::Char('G')],
        label: "End",
        hint: "",
        help: "jump to the end",
        section: Section::View,
        action: Action::Bottom,
    },
    Binding {
        keys: &[Key::Ctrl('z')],
        label: "Ctrl-Z",
        hint: "",
        help: "suspend to the shell, the clock held (fg comes back)",
        section: Section::View,
        action: Action::Suspend,
    },
];

/// The action a key press asks for, if any.
pub fn action_for(ev: &KeyEvent) -> Option<Action> {
    let binding = BINDINGS
        .iter()
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))?;
    Some(match (binding.action, ev.code) {
        (Action::SelectWorker(_), KeyCode::Char(d)) => {
            Action::SelectWorker(d.to_digit(10).unwrap_or(1) as usize - 1)
        }
        (a, _) => a,
    })
}

/// Bindings the help overlay lists: a pair such as ↑ and ↓ is shown once, by its first half
/// (and `1`-`9` on the line of `tab`, so the help fits 80x24).
pub fn help_entries() -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(|b| !is_second_half(b.action))
}

fn is_second_half(a: Action) -> bool {
    matches!(
        a,
        Action::ScrollDown
            | Action::PageDown
            | Action::Bottom
            | Action::PrevWorker
            | Action::SelectWorker(_)
            | Action::Slower
            | Action::RemoveWorker
    )
}

/// Bindings the footer shows, in order.
pub fn footer_entries() -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(|b| !b.hint.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn ctrl_c_quits_but_plain_c_crashes() {
        let ctrl_c = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        let c = press(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(action_for(&ctrl_c), Some(Action::Quit));
        assert_eq!(action_for(&c), Some(Action::Crash));
    }

    #[test]
    fn shifted_letters_are_their_own_bindings() {
        let big_a = press(KeyCode::Char('A'), KeyModifiers::SHIFT);
        let big_r = press(KeyCode::Char('R'), KeyModifiers::SHIFT);
        assert_eq!(action_for(&big_a), Some(Action::AdvanceLease));
        assert_eq!(action_for(&big_r), Some(Action::Reset));
        assert_eq!(
            action_for(&press(KeyCode::Char('r'), KeyModifiers::NONE)),
            Some(Action::Restart)
        );
    }

    #[test]
    fn digits_select_workers_from_one() {
        let three = press(KeyCode::Char('3'), KeyModifiers::NONE);
        assert_eq!(action_for(&three), Some(Action::SelectWorker(2)));
        assert_eq!(
            action_for(&press(KeyCode::Char('0'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn every_binding_is_described_and_keys_are_not_shared() {
        let mut seen = Vec::new();
        for b in BINDINGS {
            assert!(!b.help.is_empty() && !b.label.is_empty());
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
            }
        }
    }
}
