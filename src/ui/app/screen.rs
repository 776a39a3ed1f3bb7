//! Keys about what the screen shows of a crowd of workers: the workers pane's pages (the
//! timeline follows the page), and the watch's hold, which stops the frame, not the
//! workers (a watch cannot pause other machines' processes).

use super::keys::Action;
use super::App;

impl App {
    /// `>` / `<`: the first worker of the next or previous page, wrapping round; `space`
    /// in the watch: hold the screen, or let go and catch up.
    pub(super) fn act_on_screen(&mut self, action: Action) {
        match action {
            Action::WorkersPage(on) => self.turn_page(on),
            _ => self.hold_screen(!self.ui.held),
        }
    }

    fn turn_page(&mut self, on: bool) {
        let n = self.worker_count().max(1);
        let page = usize::from(self.ui.worker_page).max(1);
        let pages = n.div_ceil(page);
        let at = self.ui.selected.min(n - 1) / page;
        let to = if on {
            (at + 1) % pages
        } else {
            (at + pages - 1) % pages
        };
        self.ui.selected = to * page;
    }

    /// Hold the frame as it stands (`HELD` in the header), or let it go: the next frame is
    /// taken from everything that arrived meanwhile.
    fn hold_screen(&mut self, hold: bool) {
        self.ui.held = hold;
        self.snap.held = hold;
        self.ui.say(if hold {
            "HELD: the screen stands still, the workers go on and their rows keep arriving; space catches up"
        } else {
            "caught up: the screen follows the workers again"
        });
    }
}
