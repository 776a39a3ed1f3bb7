//! One `[[step]]`: its say, its actions, its expectations and its question, with every
//! mistake in it reported.

use std::ops::Range;

use toml::Spanned;

use crate::lesson::format::{Choice, Pane, Quiz, Step, CHOICES};

use super::ctx::Ctx;
use super::error::Mistake;
use super::raw::{RawChoice, RawStep};

impl Ctx<'_> {
    /// A step, or every mistake in it (its say, each action, each expectation).
    pub(super) fn step(&self, raw_step: Spanned<RawStep>) -> Result<Step, Vec<Mistake>> {
        let step_span = raw_step.span();
        let raw_step = raw_step.into_inner();
        let mut errors = Vec::new();
        let say = raw_step.say.filter(|s| !s.trim().is_empty());
        if say.is_none() {
            errors.push(self.p.err(step_span.clone(), "a step has no say"));
        }
        let mut actions = Vec::new();
        let mut actions_text = Vec::new();
        for a in &raw_step.actions {
            match self.action(a) {
                Ok(action) => actions.push(action),
                Err(e) => errors.push(e),
            }
            actions_text.push(a.get_ref().trim().to_string());
        }
        let mut expects = Vec::new();
        for e in &raw_step.expect {
            match self.expect(e) {
                Ok(x) => expects.push(x),
                Err(e) => errors.push(e),
            }
        }
        let quiz = match self.quiz(step_span, raw_step.ask, raw_step.choices) {
            Ok(q) => q,
            Err(mut e) => {
                errors.append(&mut e);
                None
            }
        };
        let show = raw_step.show.and_then(|s| {
            let word = s.get_ref().trim();
            let pane = Pane::ALL.into_iter().find(|p| p.word() == word);
            if pane.is_none() {
                let said = crate::engine::text::quoted(word);
                let msg = format!("show = '{said}' is not a pane (sql)");
                errors.push(self.p.err(s.span(), &msg));
            }
            pane
        });
        let Some(say) = say.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        Ok(Step {
            actions_text,
            actions,
            say: say.trim().to_string(),
            expects,
            quiz,
            show,
        })
    }

    /// A step's question: `ask` with 2-9 `choices`, each an answer and its expectation.
    pub(super) fn quiz(
        &self,
        step_span: Range<usize>,
        ask: Option<Spanned<String>>,
        choices: Vec<Spanned<RawChoice>>,
    ) -> Result<Option<Quiz>, Vec<Mistake>> {
        let Some(ask) = ask else {
            return match choices.first() {
                None => Ok(None),
                Some(c) => Err(vec![self.p.err(c.span(), "choices without an ask")]),
            };
        };
        let ask_span = ask.span();
        let ask = ask.into_inner().trim().to_string();
        let mut errors = Vec::new();
        if ask.is_empty() {
            errors.push(self.p.err(ask_span.clone(), "an empty ask"));
        }
        if !CHOICES.contains(&choices.len()) {
            let msg = format!(
                "an ask needs {}-{} choices, this one has {}",
                CHOICES.start(),
                CHOICES.end(),
                choices.len()
            );
            errors.push(self.p.err(step_span, &msg));
        }
        let mut out = Vec::new();
        for c in choices {
            let span = c.span();
            let c = c.into_inner();
            if c.answer.trim().is_empty() {
                errors.push(self.p.err(span, "a choice with an empty answer"));
                continue;
            }
            match self.expect(&c.expect) {
                Ok(expect) => out.push(Choice {
                    text: c.answer.trim().to_string(),
                    expect,
                }),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Some(Quiz {
            ask,
            choices: out,
            line: self.p.line_of(ask_span.start),
        }))
    }
}
