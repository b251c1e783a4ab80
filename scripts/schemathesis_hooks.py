"""Schemathesis hooks of scripts/schemathesis.sh.

Schemathesis 4 does not always keep a path parameter's `pattern` when it adds its own rule for path
parameters (no `/`, `{`, `}`), so it sometimes generates, as schema-valid, an identifier with a control
character in the path (e.g. `%0A`), or `.` / `..`, which the identifier pattern of the document forbids
and the server rightly refuses with 422. This filter drops exactly those generated values; everything else
is sent.
The stateful phase does not run this filter, so scripts/schemathesis.toml leaves `positive_data_acceptance`
out of that phase (its other checks still run there).

The opaque `after` cursors of the paged reads (docs/api.md "Paging") cannot be generated, only received
as an answer's `next`: `before_call` takes a generated one out of the request (see below).

CPython 3.11's `ast` module can fail with "AST constructor recursion depth mismatch" when Hypothesis
describes a strategy deep in Schemathesis' coverage walk; a higher recursion limit keeps it clear of that.
"""

import re
import sys

import schemathesis

sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

# Control characters (`char::is_control`: C0, DEL, C1), which no identifier may contain.
CONTROL = re.compile("[\u0000-\u001f\u007f-\u009f]")


@schemathesis.hook
def filter_path_parameters(context, path_parameters):
    return not any(
        isinstance(v, str) and (CONTROL.search(v) or v in (".", ".."))
        for v in (path_parameters or {}).values()
    )



# Query parameters named `after` that are opaque cursors (docs/api.md "Paging"): only a previous answer's
# `next` is one, so a generated value is garbage that the server rightly refuses with 400
# `invalid_cursor` (documented). It is taken out of the request before every call, in every phase
# (`before_call` runs for the coverage phase too, where `map_query` does not). The replay's `after` is a
# revision (an integer the document describes whole) and is kept.
OPAQUE_CURSOR_PATHS = {
    "/api/sessions",
    "/api/unknowns",
    "/api/search",
    "/api/sessions/{session_key}/turns",
    "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
    "/api/sessions/{session_key}/mutations/{mutation_id}/history",
}


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path in OPAQUE_CURSOR_PATHS and case.query and "after" in case.query:
        case.query = {k: v for k, v in case.query.items() if k != "after"}
