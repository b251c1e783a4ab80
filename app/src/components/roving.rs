//! Roving focus for a timeline (docs/design.md "Keyboard"): the list is one tab stop. Exactly one row has
//! `tabindex="0"` (the one last focused, else the first shown); every other row, and every link and button
//! inside any row, has `tabindex="-1"`, so Tab passes the list in one step. Inside the list:
//!
//! | key | on a row | on a control inside a row |
//! |---|---|---|
//! | ArrowDown / `j`, ArrowUp / `k` | next / previous row | the next / previous row |
//! | Home / End | first / last row shown | first / last row shown |
//! | ArrowRight | the row's first control | the row's next control |
//! | ArrowLeft | – | the row's previous control, or the row from its first |
//! | Escape | – | back to the row |
//! | Enter | opens the row's operation page (its `.history-link`) | the control's own action |
//!
//! Rows are elements with the class `timeline-row` and a `data-row-id` (the `mutation_id`); controls are
//! the `a[href]` and `button` elements inside them.

use leptos::prelude::*;

/// In context inside a roving list: the controls of its rows leave the tab order.
#[derive(Clone, Copy)]
pub struct RovingList;

/// `tabindex` of a link or button that may sit inside a roving list's row: `-1` there, none elsewhere.
pub fn control_tabindex() -> Option<&'static str> {
    use_context::<RovingList>().map(|_| "-1")
}

/// Which row is the list's tab stop: `active` when it is among `shown` (ids in order), else the first.
pub fn tab_stop<'a>(
    active: Option<&'a str>,
    mut shown: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut first = None;
    for id in shown.by_ref() {
        if Some(id) == active {
            return Some(id);
        }
        first.get_or_insert(id);
    }
    first
}

/// How the keys of a roving list (a timeline's rows) work, for screen readers (`id="timeline-keys"`, once a
/// page).
#[component]
pub fn KeysHelp() -> impl IntoView {
    view! {
        <p class="sr-only" id="timeline-keys">"One tab stop: use the arrow keys, or j and k, to move between outcomes, Home and End for the first and last, the right arrow to reach a row's links and buttons, Enter to open an outcome's history."</p>
    }
}

/// Where a key moves focus (see the module's table); `None` for keys the list leaves alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    NextRow,
    PreviousRow,
    FirstRow,
    LastRow,
    NextControl,
    PreviousControl,
    Row,
    Open,
}

impl Move {
    /// The move for `key` (a `KeyboardEvent.key`) pressed on a row (`on_row`) or on a control in a row.
    pub fn of(key: &str, on_row: bool) -> Option<Move> {
        Some(match key {
            "ArrowDown" | "j" => Move::NextRow,
            "ArrowUp" | "k" => Move::PreviousRow,
            "Home" => Move::FirstRow,
            "End" => Move::LastRow,
            "ArrowRight" => Move::NextControl,
            "ArrowLeft" if !on_row => Move::PreviousControl,
            "Escape" if !on_row => Move::Row,
            "Enter" if on_row => Move::Open,
            _ => return None,
        })
    }
}

/// The `data-row-id` of the row holding the focus event's target (for the list's `focusin`).
pub fn focused_row(ev: &leptos::ev::FocusEvent) -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        dom::row_of(ev.target()?).and_then(|row| row.get_attribute("data-row-id"))
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = ev;
        None
    }
}

/// The list's `keydown`: moves focus as the module's table says.
pub fn on_keydown(ev: leptos::ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    dom::keydown(ev);
    #[cfg(not(feature = "hydrate"))]
    let _ = ev;
}

#[cfg(feature = "hydrate")]
mod dom {
    use wasm_bindgen::JsCast;
    use web_sys::{Element, EventTarget, HtmlElement};

    use super::Move;

    const ROW: &str = "timeline-row";

    fn is_row(e: &Element) -> bool {
        e.class_list().contains(ROW)
    }

    /// The row holding `target` (the target itself when it is a row).
    pub fn row_of(target: EventTarget) -> Option<Element> {
        target
            .dyn_into::<Element>()
            .ok()?
            .closest(".timeline-row")
            .ok()?
    }

    fn controls(row: &Element) -> Vec<HtmlElement> {
        let Ok(list) = row.query_selector_all("a[href], button") else {
            return Vec::new();
        };
        (0..list.length())
            .filter_map(|i| list.item(i)?.dyn_into::<HtmlElement>().ok())
            .collect()
    }

    fn sibling_row(row: &Element, forward: bool) -> Option<Element> {
        let mut at = if forward {
            row.next_element_sibling()
        } else {
            row.previous_element_sibling()
        };
        while let Some(e) = at {
            if is_row(&e) {
                return Some(e);
            }
            at = if forward {
                e.next_element_sibling()
            } else {
                e.previous_element_sibling()
            };
        }
        None
    }

    fn end_row(row: &Element, last: bool) -> Option<Element> {
        let list = row.parent_element()?;
        let rows = list.query_selector_all(":scope > .timeline-row").ok()?;
        let n = rows.length();
        if n == 0 {
            return None;
        }
        rows.item(if last { n - 1 } else { 0 })?.dyn_into().ok()
    }

    fn focus(e: Option<Element>) -> bool {
        match e.and_then(|e| e.dyn_into::<HtmlElement>().ok()) {
            Some(h) => h.focus().is_ok(),
            None => false,
        }
    }

    pub fn keydown(ev: web_sys::KeyboardEvent) {
        if ev.ctrl_key() || ev.alt_key() || ev.meta_key() {
            return;
        }
        let Some(target) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
            return;
        };
        let Some(row) = row_of(target.clone().into()) else {
            return;
        };
        let on_row = target == row;
        let Some(mv) = Move::of(&ev.key(), on_row) else {
            return;
        };
        let controls = controls(&row);
        let at = controls
            .iter()
            .position(|c| c.unchecked_ref::<Element>() == &target);
        let moved = match mv {
            Move::NextRow => focus(sibling_row(&row, true)),
            Move::PreviousRow => focus(sibling_row(&row, false)),
            Move::FirstRow => focus(end_row(&row, false)),
            Move::LastRow => focus(end_row(&row, true)),
            Move::NextControl => {
                let next = at.map_or(0, |i| i + 1);
                controls.get(next).is_some_and(|c| c.focus().is_ok())
            }
            Move::PreviousControl => match at {
                Some(0) | None => focus(Some(row.clone())),
                Some(i) => controls[i - 1].focus().is_ok(),
            },
            Move::Row => focus(Some(row.clone())),
            Move::Open => match row.query_selector(".history-link").ok().flatten() {
                Some(link) => {
                    if let Ok(link) = link.dyn_into::<HtmlElement>() {
                        link.click();
                    }
                    true
                }
                None => false,
            },
        };
        if moved {
            ev.prevent_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tab_stop_is_the_active_row_when_shown_else_the_first() {
        let ids = ["a", "b", "c"];
        assert_eq!(tab_stop(Some("b"), ids.into_iter()), Some("b"));
        assert_eq!(tab_stop(Some("gone"), ids.into_iter()), Some("a"));
        assert_eq!(tab_stop(None, ids.into_iter()), Some("a"));
        assert_eq!(tab_stop(Some("a"), std::iter::empty()), None);
    }

    #[test]
    fn keys_move_as_the_table_says() {
        assert_eq!(Move::of("j", true), Some(Move::NextRow));
        assert_eq!(Move::of("ArrowUp", false), Some(Move::PreviousRow));
        assert_eq!(Move::of("End", true), Some(Move::LastRow));
        assert_eq!(Move::of("ArrowRight", true), Some(Move::NextControl));
        assert_eq!(Move::of("ArrowLeft", true), None);
        assert_eq!(Move::of("ArrowLeft", false), Some(Move::PreviousControl));
        assert_eq!(Move::of("Escape", false), Some(Move::Row));
        assert_eq!(Move::of("Enter", true), Some(Move::Open));
        // Enter on a link or button is the control's own.
        assert_eq!(Move::of("Enter", false), None);
        assert_eq!(Move::of("a", true), None);
    }
}
