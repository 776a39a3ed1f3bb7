//! Every figure a lesson step names is on screen during that step, at the smallest
//! screen the dashboard draws (80x24): each expectation's value is read off the drawn
//! frame (the table's cells, its counts, the Ledgers panel), and each table column the
//! narration names has its column or figure in view. The event log keeps three lines.

use leaselab::lesson::{self, Expect, Figure};
use leaselab::ui::render::ledger;

mod support;

use support::{frame_lines, lesson_app, next};

const W: usize = 80;
const H: u16 = 24;
/// The Workers and Ledgers column is this wide at 80 columns (when the frame has no
/// Ledgers panel to find it by).
const SIDE: usize = 36;

/// A drawn frame, split into the table's side and the Ledgers panel.
struct Screen {
    lines: Vec<Vec<char>>,
    /// Where the Workers and Ledgers column starts.
    side: usize,
}

impl Screen {
    /// One frame of `app` at 80x24.
    fn of(app: &mut leaselab::ui::App) -> Screen {
        Screen::sized(app, W as u16, H)
    }

    /// One frame of `app` at `width` x `height`.
    fn sized(app: &mut leaselab::ui::App, width: u16, height: u16) -> Screen {
        let lines: Vec<Vec<char>> = frame_lines(app, width, height)
            .iter()
            .map(|l| l.chars().collect())
            .collect();
        // The column starts at the corner the Ledgers title hangs from.
        let side = lines
            .iter()
            .find_map(|l| {
                let text: String = l.iter().collect();
                let at = text.find(" Ledgers ")?;
                let before = text[..at].chars().count();
                l[..before].iter().rposition(|c| matches!(c, '┌' | '├'))
            })
            .unwrap_or(W - SIDE);
        Screen { lines, side }
    }

    fn text(&self) -> String {
        self.lines
            .iter()
            .map(|l| l.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The table's half of each row.
    fn table(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| l[..self.side].iter().collect())
            .collect()
    }

    /// The lines inside the Ledgers panel, without its borders.
    fn ledger(&self) -> Vec<String> {
        let side: Vec<String> = self
            .lines
            .iter()
            .map(|l| l[self.side..].iter().collect())
            .collect();
        let top = side
            .iter()
            .position(|l| l.contains("Ledgers"))
            .expect("a Ledgers panel");
        side[top + 1..]
            .iter()
            .take_while(|l| l.starts_with('│'))
            .map(|l| l.trim_matches('│').to_string())
            .collect()
    }

    /// The cell of `key`'s row under the column headed `column`.
    fn cell(&self, key: &str, column: &str) -> Option<String> {
        let table = self.table();
        let header = table
            .iter()
            .find(|l| l.contains("Key") && l.contains("Status"))?;
        let header: Vec<char> = header.chars().collect();
        let starts: Vec<usize> = (1..header.len())
            .filter(|&i| header[i] != ' ' && header[i - 1] == ' ' || i == 1)
            .collect();
        let title_at =
            |at: usize| -> String { header[at..].iter().take_while(|c| **c != ' ').collect() };
        let at = starts.iter().position(|&s| title_at(s) == column)?;
        // Titles sit where their column starts (Ver is as wide as its title).
        let end = starts.get(at + 1).copied().unwrap_or(header.len() - 1);
        let row = table
            .iter()
            .find(|l| l.starts_with(['┃', '│']) && l.contains(key))?;
        let row: Vec<char> = row.chars().collect();
        Some(
            row[starts[at]..end]
                .iter()
                .collect::<String>()
                .trim()
                .to_string(),
        )
    }

    /// The spotlight text of `key` in the Ledgers panel, its wrapped lines joined.
    fn spot(&self, key: &str) -> Option<String> {
        let lines = self.ledger();
        let at = lines.iter().position(|l| l.starts_with(key))?;
        let mut text = lines[at].clone();
        for l in &lines[at + 1..] {
            if !l.starts_with("  ") {
                break;
            }
            text.push(' ');
            text.push_str(l.trim());
        }
        Some(text)
    }
}

/// `label value` with nothing but spaces between and no digit glued after the value.
fn shows(text: &str, label: &str, value: &str) -> bool {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let needle = format!("{label} {value}");
    flat.match_indices(&needle).any(|(i, _)| {
        let before_ok = i == 0 || !flat[..i].ends_with(|c: char| c.is_alphanumeric());
        let after = flat[i + needle.len()..].chars().next();
        before_ok && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// The Ledgers panel shows the figure `name` at `value`, under that name.
fn ledger_shows(s: &Screen, name: &str, value: &str) -> bool {
    assert!(ledger::NAMES.contains(&name), "{name} is no panel figure");
    shows(&s.ledger().join("\n"), name, value)
}

/// Where the expectation's figure is on screen, or why it is not.
fn on_screen(s: &Screen, e: &Expect) -> Result<(), String> {
    let v = e.value.as_str();
    let spot =
        |m: &lesson::MessageSel, name: &str| s.spot(&m.key).is_some_and(|t| shows(&t, name, v));
    let found = match &e.figure {
        Figure::Status(m) => s.cell(&m.key, "Status").as_deref() == Some(v),
        Figure::Owner(m) => {
            let owner = if v == "none" { "-" } else { v };
            s.cell(&m.key, "LockedBy").as_deref() == Some(owner)
        }
        Figure::Lease(m) => s.cell(&m.key, "Ver").as_deref() == Some(v),
        Figure::Processed(m) => spot(m, lesson::PROCESSED),
        Figure::Attempts(m) => spot(m, "attempts"),
        Figure::Payment(m) => spot(m, "payment"),
        Figure::ProviderCalls(Some(m)) => spot(m, lesson::PROVIDER_CALLS),
        Figure::ProviderEffects(Some(m)) => spot(m, lesson::SIDE_EFFECTS),
        Figure::ProviderCalls(None) => ledger_shows(s, lesson::PROVIDER_CALLS, v),
        Figure::ProviderEffects(None) => ledger_shows(s, lesson::SIDE_EFFECTS, v),
        Figure::Ledger(name) => ledger_shows(s, name, v),
        Figure::Payments(status) => ledger_shows(s, &format!("payments {status}"), v),
        Figure::Outbox(status) => {
            let word = match status.to_string().as_str() {
                "DeadLettered" => "dead-lettered".to_string(),
                other => other.to_lowercase(),
            };
            let n: u64 = v.parse().unwrap_or(u64::MAX);
            // The table's counts leave out a zero dead-letter count.
            let table = s.table().join("\n");
            shows(&table, v, &word) || (n == 0 && word == "dead-lettered")
        }
    };
    if found {
        Ok(())
    } else {
        Err(format!("`{}` is not on screen", e.text))
    }
}

/// Table columns a narration may name, and what on screen shows each (a column title, or
/// a figure of the Ledgers panel's spotlight).
const COLUMN_WORDS: &[(&str, &str)] = &[
    ("LockedBy", "column LockedBy"),
    ("LockedUntilUtc", "column Left"),
    ("LeaseVersion", "column Ver"),
    ("Attempts", "spot attempts"),
    ("AvailableAtUtc", "spot available"),
    ("LastError", "nowhere"),
    ("ProcessedAtUtc", "nowhere"),
    ("TransactionId", "nowhere"),
];

fn named_columns_on_screen(s: &Screen, say: &str) -> Result<(), String> {
    for (word, shown) in COLUMN_WORDS {
        if !say.contains(word) {
            continue;
        }
        let ok = match shown.split_once(' ') {
            Some(("column", title)) => s
                .table()
                .iter()
                .any(|l| l.contains("Key") && l.split_whitespace().any(|w| w == title)),
            Some(("spot", label)) => s
                .ledger()
                .iter()
                .any(|l| l.split_whitespace().any(|w| w == label)),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "the narration names {word}, the screen does not show it"
            ));
        }
    }
    Ok(())
}

/// Lines of events in view (inside the Events pane).
fn log_lines(s: &Screen) -> usize {
    let text = s.text();
    let lines: Vec<&str> = text.lines().collect();
    let Some(top) = lines.iter().position(|l| l.contains("Events")) else {
        return 0;
    };
    lines[top + 1..]
        .iter()
        .take_while(|l| l.starts_with('│'))
        .count()
}

#[test]
fn every_figure_a_step_names_is_on_screen_at_80x24() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for b in lesson::BUILT_INS {
        let lesson = lesson::built_in(b.name).unwrap();
        let mut app = lesson_app(b.name);
        for (i, step) in lesson.steps.iter().enumerate() {
            next(&mut app);
            let s = Screen::of(&mut app);
            let mut found: Vec<String> = step
                .expects
                .iter()
                .filter_map(|e| on_screen(&s, e).err())
                .collect();
            found.extend(named_columns_on_screen(&s, &step.say).err());
            // The SQL pane a step opens takes the log's place on a small screen (`s` gives
            // the log back): then it is the pane that must be in view.
            let sql_instead = (s.text().contains("┌ SQL ·") || s.text().contains("├ SQL ·"))
                && !s.text().contains("┌ Events")
                && !s.text().contains("├ Events");
            if log_lines(&s) < 3 && !sql_instead {
                found.push(format!("{} event lines in view", log_lines(&s)));
            }
            checked += step.expects.len();
            for f in found {
                problems.push(format!("{} step {}: {f}\n{}", b.name, i + 1, s.text()));
            }
        }
    }
    assert!(checked > 100, "only {checked} expectations checked");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Every ledger figure a lesson may expect has its place on the Ledgers panel, under the
/// name the lesson uses (`overlaps` too, which a saved `explore --sql` lesson expects).
#[test]
fn every_ledger_figure_a_lesson_may_expect_is_a_panel_figure() {
    let missing: Vec<&str> = lesson::LEDGER_FIGURES
        .iter()
        .map(|f| f.name)
        .filter(|n| !ledger::NAMES.contains(n))
        .collect();
    assert!(missing.is_empty(), "not on the Ledgers panel: {missing:?}");
}

#[test]
fn a_figure_the_screen_does_not_show_is_found_missing() {
    // The same reading, told a wrong value, must say it is not there: the check can fail.
    let lesson = lesson::built_in("one-writer").unwrap();
    let mut app = lesson_app("one-writer");
    next(&mut app);
    let s = Screen::of(&mut app);
    let writes = lesson.steps[0]
        .expects
        .iter()
        .find(|e| e.text.contains("writes"))
        .unwrap();
    assert!(on_screen(&s, writes).is_ok(), "{}", s.text());
    let wrong = Expect {
        value: "17".into(),
        ..writes.clone()
    };
    assert!(on_screen(&s, &wrong).is_err());
    assert!(named_columns_on_screen(&s, "its LastError").is_err());
}

/// Every name of a figure a narration may use: the Ledgers panel's and a message's own.
fn figure_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ledger::NAMES.to_vec();
    names.push(lesson::PROCESSED);
    names.extend(lesson::LEDGER_FIGURES.iter().map(|f| f.name));
    names.sort();
    names.dedup();
    names
}

/// The figure names `say` uses as words: each name as written, and a name of two words in
/// the singular too (`one side effect`). A lone word is matched as written, so the verbs
/// and the singular nouns of ordinary prose (`claim`, `writes`'s `write`) are not taken
/// for figures; `Processed` the status is not `processed` the figure.
fn names_in(say: &str) -> Vec<&'static str> {
    let flat = say.split_whitespace().collect::<Vec<_>>().join(" ");
    let has = |phrase: &str| {
        flat.match_indices(phrase).any(|(i, _)| {
            let before = flat[..i].chars().next_back();
            let after = flat[i + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    };
    figure_names()
        .into_iter()
        .filter(|n| {
            let singular = n.contains(' ').then(|| n.trim_end_matches('s'));
            has(n) || singular.is_some_and(has)
        })
        .collect()
}

/// The names a narration uses that the Ledgers panel does not show, under that name.
fn unshown_names(s: &Screen, say: &str) -> Vec<&'static str> {
    let panel = s.ledger().join(" ");
    let panel = panel.split_whitespace().collect::<Vec<_>>().join(" ");
    names_in(say)
        .into_iter()
        .filter(|n| {
            !panel
                .match_indices(n)
                .any(|(i, _)| !panel[..i].ends_with(|c: char| c.is_alphanumeric()))
        })
        .collect()
}

#[test]
fn every_figure_a_narration_names_is_on_screen_under_that_name() {
    let mut problems = Vec::new();
    let mut named = 0;
    for (w, h) in [(80, 24), (120, 40)] {
        for b in lesson::BUILT_INS {
            let lesson = lesson::built_in(b.name).unwrap();
            let mut app = lesson_app(b.name);
            for (i, step) in lesson.steps.iter().enumerate() {
                next(&mut app);
                let s = Screen::sized(&mut app, w, h);
                named += names_in(&step.say).len();
                for n in unshown_names(&s, &step.say) {
                    problems.push(format!(
                        "{} step {} at {w}x{h}: the narration says \"{n}\", the Ledgers panel does not\n{}",
                        b.name,
                        i + 1,
                        s.ledger().join("\n")
                    ));
                }
            }
        }
    }
    assert!(
        named > 20,
        "only {named} figure names found in the narrations"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_narration_naming_a_figure_off_screen_is_caught() {
    // zombie-worker's first step shows PAY-001's calls and side effects, not the ledger's
    // dead letters: a narration naming them is caught, by their name or the singular.
    let mut app = lesson_app("zombie-worker");
    next(&mut app);
    let s = Screen::sized(&mut app, 80, 24);
    assert_eq!(
        unshown_names(&s, "one side effect so far"),
        Vec::<&str>::new()
    );
    assert_eq!(
        unshown_names(&s, "no dead letter yet"),
        vec!["dead letters"]
    );
    assert_eq!(
        names_in("Worker-A claimed it; the row is Processed"),
        Vec::<&str>::new()
    );
    assert_eq!(
        names_in("two provider calls, processed 2"),
        vec!["processed", "provider calls"]
    );
}
