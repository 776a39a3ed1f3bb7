//! The key bindings, as data. The footer and the help overlay are both drawn from
//! [`BINDINGS`], so a key is described in exactly one place.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

mod bindings;
pub use bindings::BINDINGS;

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
    /// Free play: freeze the selected worker thread holding what it holds, or wake it.
    Freeze,
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
    /// Show or hide the SQL pane: each worker's last statements.
    ToggleSql,
    /// Give the terminal back to the shell and stop, as a shell's Ctrl-Z does.
    Suspend,
    /// The workers pane's next (true) or previous page; the timeline follows.
    WorkersPage(bool),
    /// The watch: hold the screen still while the workers go on, or catch up.
    HoldScreen,
    /// A replay: one event back / on, the previous / next mark, the first / last event.
    EventBack,
    EventOn,
    MarkBack,
    MarkOn,
    FirstEvent,
    LastEvent,
    /// The watch: show or hide a class's scoreboard.
    Scoreboard,
    /// The watch: add a few payments to the class's current round.
    AddRoundPayments,
    /// The watch: the workers pane shows which leaselab each worker runs, on which system,
    /// or its work again.
    WhoRunsWhat,
}

/// Which dashboard is on screen: each has its own keys, and its footer and help list
/// those and no others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Worker threads of this dashboard: free play and the scenarios.
    #[default]
    Free,
    /// A lesson, or a scenario's story, stepped with its narration.
    Lesson,
    /// `leaselab replay DB`: a recorded run; nothing changes.
    Replay,
    /// `--watch`: worker processes someone else started, on their own settings.
    Watch,
    /// `--processes`: worker processes this dashboard started and signals.
    Processes,
}

impl Mode {
    fn bit(self) -> u8 {
        match self {
            Mode::Free => FREE.0,
            Mode::Lesson => LESSON.0,
            Mode::Replay => REPLAY.0,
            Mode::Watch => WATCH.0,
            Mode::Processes => PROCESSES.0,
        }
    }
}

/// The modes a binding works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes(u8);

const FREE: Modes = Modes(1);
const LESSON: Modes = Modes(2);
const REPLAY: Modes = Modes(4);
const WATCH: Modes = Modes(8);
const PROCESSES: Modes = Modes(16);
/// Worker threads of this dashboard.
const THREADS: Modes = Modes(FREE.0 | LESSON.0);
/// Every mode where something runs.
const LIVE: Modes = Modes(FREE.0 | LESSON.0 | WATCH.0 | PROCESSES.0);
const EVERY: Modes = Modes(LIVE.0 | REPLAY.0);

impl Modes {
    pub fn has(self, mode: Mode) -> bool {
        self.0 & mode.bit() != 0
    }
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
    /// Where it works.
    pub modes: Modes,
    /// A mode where the key says something else: (mode, footer hint, help line).
    pub differs: &'static [(Mode, &'static str, &'static str)],
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

impl Binding {
    /// Its footer hint in `mode`.
    pub fn hint_in(&self, mode: Mode) -> &'static str {
        self.differs
            .iter()
            .find(|d| d.0 == mode)
            .map_or(self.hint, |d| d.1)
    }

    /// Its help line in `mode`.
    pub fn help_in(&self, mode: Mode) -> &'static str {
        self.differs
            .iter()
            .find(|d| d.0 == mode)
            .map_or(self.help, |d| d.2)
    }
}

/// The binding a key press matches among `bindings`, with the action it asks for.
fn matching<'b>(mut bindings: impl Iterator<Item = &'b Binding>, ev: &KeyEvent) -> Option<Action> {
    let binding = bindings.find(|b| b.keys.iter().any(|k| k.matches(ev)))?;
    Some(match (binding.action, ev.code) {
        (Action::SelectWorker(_), KeyCode::Char(d)) => {
            Action::SelectWorker(d.to_digit(10).unwrap_or(1) as usize - 1)
        }
        (a, _) => a,
    })
}

/// The action a key press asks for in `mode`, if it has one there.
pub fn action_for(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    matching(BINDINGS.iter().filter(|b| b.modes.has(mode)), ev)
}

/// A key with no action in `mode` that has one in another: that action, so the dashboard
/// can say why the key does nothing here.
pub fn elsewhere(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    if action_for(mode, ev).is_some() {
        return None;
    }
    matching(BINDINGS.iter(), ev)
}

/// Bindings the help overlay lists in `mode`: a pair such as ↑ and ↓ is shown once, by its
/// first half (and `1`-`9` on the line of `tab`, so the help fits 80x24).
pub fn help_entries(mode: Mode) -> impl Iterator<Item = &'static Binding> {
    BINDINGS
        .iter()
        .filter(move |b| b.modes.has(mode) && !is_second_half(b.action))
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
            | Action::WorkersPage(false)
            | Action::EventOn
            | Action::MarkOn
            | Action::LastEvent
    )
}

/// Bindings the footer shows in `mode`, in order.
pub fn footer_entries(mode: Mode) -> impl Iterator<Item = &'static Binding> {
    BINDINGS
        .iter()
        .filter(move |b| b.modes.has(mode) && !b.hint_in(mode).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn action_for(ev: &KeyEvent) -> Option<Action> {
        super::action_for(Mode::Free, ev)
    }

    const MODES: [Mode; 5] = [
        Mode::Free,
        Mode::Lesson,
        Mode::Replay,
        Mode::Watch,
        Mode::Processes,
    ];

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
    fn every_binding_is_described_and_no_key_is_bound_twice_in_one_mode() {
        for mode in MODES {
            let mut seen = Vec::new();
            for b in BINDINGS.iter().filter(|b| b.modes.has(mode)) {
                assert!(!b.help_in(mode).is_empty() && !b.label.is_empty());
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice in {mode:?}");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn each_mode_has_its_own_keys() {
        let right = press(KeyCode::Right, KeyModifiers::NONE);
        assert_eq!(
            super::action_for(Mode::Replay, &right),
            Some(Action::EventOn)
        );
        assert_eq!(
            super::action_for(Mode::Free, &right),
            Some(Action::FocusNext)
        );
        let c = press(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(super::action_for(Mode::Replay, &c), None);
        assert_eq!(super::action_for(Mode::Watch, &c), None);
        assert_eq!(elsewhere(Mode::Watch, &c), Some(Action::Crash));
        assert_eq!(super::action_for(Mode::Processes, &c), Some(Action::Crash));
        let h = press(KeyCode::Char('h'), KeyModifiers::NONE);
        assert_eq!(super::action_for(Mode::Watch, &h), None);
        let ctrl_c = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for mode in MODES {
            assert_eq!(
                super::action_for(mode, &ctrl_c),
                Some(Action::Quit),
                "{mode:?}"
            );
        }
    }
}
