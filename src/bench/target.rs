//! A bound a figure of the bench should respect, and how it reads in the report.

use serde::Serialize;

/// A bound a figure of the bench should respect.
#[derive(Debug, Clone)]
pub struct Target {
    pub what: &'static str,
    pub bound: f64,
    /// The figure must stay at or under the bound (else reach it).
    pub at_most: bool,
    /// The median of `rounds`.
    pub got: Option<f64>,
    /// The figure of each round that measured it, in round order.
    pub rounds: Vec<f64>,
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Target", 6)?;
        st.serialize_field("what", self.what)?;
        st.serialize_field("bound", &self.bound)?;
        st.serialize_field("at_most", &self.at_most)?;
        st.serialize_field("got", &self.got)?;
        st.serialize_field("rounds", &self.rounds)?;
        st.serialize_field("met", &self.met())?;
        st.end()
    }
}

impl Target {
    pub fn met(&self) -> Option<bool> {
        self.got.map(|v| {
            if self.at_most {
                v <= self.bound
            } else {
                v >= self.bound
            }
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.at_most { "<=" } else { ">=" };
        write!(f, "{} {op} {:.1}: ", self.what, self.bound)?;
        let Some(v) = self.got else {
            return f.write_str("not measured in this run");
        };
        write!(f, "{v:.2}")?;
        if self.rounds.len() > 1 {
            let each: Vec<String> = self.rounds.iter().map(|r| format!("{r:.2}")).collect();
            write!(
                f,
                " (median of {} rounds: {})",
                self.rounds.len(),
                each.join(" ")
            )?;
        }
        f.write_str(if self.met() == Some(true) {
            ", met"
        } else {
            ", NOT met"
        })
    }
}
