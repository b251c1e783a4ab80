//! The report: one line per figure with its limit measured in the same run, the ratio, the target and
//! whether the target is met.

/// What a figure's ratio must be.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// No target: shown for context.
    None,
    /// The ratio must be at least this.
    AtLeast(f64),
    /// The ratio must be at most this.
    AtMost(f64),
}

/// One line of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// What is measured.
    pub name: String,
    /// The figure, with its unit.
    pub value: String,
    /// What it is compared with, with its unit.
    pub limit: String,
    /// value ÷ limit; NaN when a part is missing.
    pub ratio: f64,
    /// What the ratio must be.
    pub target: Target,
    /// Requests of the figure failed (the result shows `ERR`).
    pub failed: bool,
}

impl Row {
    /// A row without a figure: what was to be measured could not be.
    pub fn missing(name: &str, target: Target, why: &str) -> Row {
        Row {
            name: name.to_owned(),
            value: "n/a".to_owned(),
            limit: why.to_owned(),
            ratio: f64::NAN,
            target,
            failed: true,
        }
    }

    /// `PASS`, `MISS`, `info` (no target) or `ERR` (requests failed, or no figure).
    pub fn result(&self) -> &'static str {
        if self.failed {
            return "ERR";
        }
        match self.target {
            Target::None => "info",
            _ if self.ratio.is_nan() => "ERR",
            Target::AtLeast(t) if self.ratio >= t => "PASS",
            Target::AtMost(t) if self.ratio <= t => "PASS",
            _ => "MISS",
        }
    }
}

fn target_text(t: Target) -> String {
    match t {
        Target::None => "-".to_owned(),
        Target::AtLeast(x) => format!(">= {}x", trim(x)),
        Target::AtMost(x) => format!("<= {}x", trim(x)),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn ratio_text(r: f64) -> String {
    if r.is_nan() {
        "-".to_owned()
    } else if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 0.01 {
        format!("{r:.2}x")
    } else {
        format!("{r:.4}x")
    }
}

/// Prints the table: a section title is a row whose value, limit and ratio are empty.
pub fn print(rows: &[Row]) {
    // Section titles (empty value) stand on their own line and do not widen the columns.
    let figures = || rows.iter().filter(|r| !r.value.is_empty());
    let width = |f: fn(&Row) -> &str, least: usize| {
        figures()
            .map(|r| f(r).chars().count())
            .max()
            .unwrap_or(0)
            .max(least)
    };
    let widths = [
        width(|r| &r.name, 6),
        width(|r| &r.value, 5),
        width(|r| &r.limit, 16),
    ];
    let line = |name: &str, value: &str, limit: &str, ratio: &str, target: &str, result: &str| {
        println!(
            "{name:<w0$}  {value:>w1$}  {limit:<w2$}  {ratio:>8}  {target:<9}  {result}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
        );
    };
    line(
        "figure",
        "value",
        "limit (same run)",
        "ratio",
        "target",
        "result",
    );
    for r in rows {
        if r.value.is_empty() {
            println!("{}", r.name);
            continue;
        }
        line(
            &r.name,
            &r.value,
            &r.limit,
            &ratio_text(r.ratio),
            &target_text(r.target),
            r.result(),
        );
    }
}

/// A section title.
pub fn section(title: &str) -> Row {
    Row {
        name: format!("-- {title}"),
        value: String::new(),
        limit: String::new(),
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    }
}
