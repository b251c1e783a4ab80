#!/usr/bin/env python3
"""What each crate adds to a wasm module: code bytes per crate, from the module's name section.

usage: scripts/wasm-sizes.py <module.wasm> [--top N] [--functions CRATE]

The module must keep its name section: the wasm that rustc links (target/front/wasm32-unknown-unknown/
wasm-release/app.wasm, before wasm-bindgen drops what the browser does not need), or that module put through
wasm-bindgen without --remove-name-section (what the bundle holds, names included). A function counts for the crate
whose path its (legacy-mangled) name starts with; `<A as B>::f` counts for A's crate, so generic code counts
where it is defined (serde_json's deserializer for the app's types is serde_json's). Data segments are
counted apart. The last column is the part of a crate's code instantiated
for the app's own types (its views, its wire types): what the app's code makes that crate generate. Names only: no dependency of its own, nothing installed.
"""
import collections
import re
import sys


def leb(buf, pos):
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def sections(buf):
    assert buf[:4] == b"\0asm", "not a wasm module"
    pos = 8
    while pos < len(buf):
        sid = buf[pos]
        size, pos = leb(buf, pos + 1)
        yield sid, buf[pos : pos + size]
        pos += size


def parse(buf):
    imported = 0
    bodies = []
    names = {}
    data = 0
    for sid, body in sections(buf):
        if sid == 2:  # imports: imported functions take the first indices
            count, p = leb(body, 0)
            for _ in range(count):
                for _ in range(2):
                    n, p = leb(body, p)
                    p += n
                kind = body[p]
                p += 1
                if kind == 0:
                    _, p = leb(body, p)
                    imported += 1
                elif kind == 1:
                    p += 1
                    flags, p = leb(body, p)
                    _, p = leb(body, p)
                    if flags & 1:
                        _, p = leb(body, p)
                elif kind == 2:
                    flags, p = leb(body, p)
                    _, p = leb(body, p)
                    if flags & 1:
                        _, p = leb(body, p)
                elif kind == 3:
                    p += 2
                else:
                    _, p = leb(body, p + 1) if kind == 4 else (0, p)
        elif sid == 10:
            count, p = leb(body, 0)
            for _ in range(count):
                size, p = leb(body, p)
                bodies.append(size)
                p += size
        elif sid == 11:
            data = len(body)
        elif sid == 0:
            n, p = leb(body, 0)
            if body[p : p + n] != b"name":
                continue
            p += n
            while p < len(body):
                sub = body[p]
                size, p = leb(body, p + 1)
                end = p + size
                if sub == 1:
                    count, q = leb(body, p)
                    for _ in range(count):
                        idx, q = leb(body, q)
                        n, q = leb(body, q)
                        names[idx] = body[q : q + n].decode("utf-8", "replace")
                        q += n
                p = end
    return imported, bodies, names, data


APP = "app"  # the crate whose types instantiate the generic code counted in "for app types"
STD = {"core", "alloc", "std", "compiler_builtins", "dlmalloc", "panic_abort"}
V0_CRATE = re.compile(r"C(?:s[0-9A-Za-z]*_)?(\d+)_?")


def crates_v0(name):
    """The crate roots of a v0-mangled name (`_R...`), in order: each is `C[s<hash>_]<len><ident>`."""
    out = []
    pos = 2
    while True:
        m = V0_CRATE.search(name, pos)
        if not m:
            return out
        n = int(m.group(1))
        ident = name[m.end() : m.end() + n]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident or "-"):
            out.append(ident)
            pos = m.end() + n
        else:
            pos = m.start() + 1


def crates_legacy(name):
    """The crate-like path starts of a legacy-mangled name (`_ZN...E`)."""
    text = name.replace("$LT$", "<").replace("$GT$", ">").replace("$u20$", " ").replace("..", "::")
    return [c for c in re.findall(r"(?:^|[<\s&*(,])_*([a-z_][a-z0-9_]*)::", text[3:])]


DEMANGLED_CRATE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[[0-9a-f]+\]")


def crates_in(name):
    if DEMANGLED_CRATE.search(name):  # wasm-bindgen writes demangled names: `<tachys[7e8c…]::view::…>`
        return DEMANGLED_CRATE.findall(name)
    if name.startswith("_R"):
        return crates_v0(name)
    if name.startswith("_ZN"):
        return crates_legacy(name)
    return []


def crate_of(name):
    """The crate a function counts for: the first crate of its path that is not the standard library's
    (so `core::ptr::drop_in_place<tachys::…>` is tachys', `<serde_json::Error as core::fmt::Display>` is
    serde_json's), else the standard library crate."""
    crates = crates_in(name)
    if crates:
        pass
    elif name.startswith("__wbg") or name.startswith("__wbindgen") or "wasm_bindgen" in name:
        return "wasm_bindgen"
    elif name in ("memcpy", "memmove", "memset", "memcmp") or name.startswith("__"):
        return "compiler_builtins"
    else:
        crates = [name.split("::")[0]] if "::" in name else []
    if not crates:
        return "(other: " + name[:40] + ")"
    for crate in crates:
        if crate not in STD:
            return crate
    return crates[0]


def main():
    args = sys.argv[1:]
    path = args[0]
    top = int(args[args.index("--top") + 1]) if "--top" in args else 40
    focus = args[args.index("--functions") + 1] if "--functions" in args else None
    buf = open(path, "rb").read()
    imported, bodies, names, data = parse(buf)
    if not names:
        sys.exit(f"{path} has no name section (use the wasm rustc linked, before wasm-bindgen)")
    per_crate = collections.Counter()
    for_app = collections.Counter()
    count = collections.Counter()
    functions = []
    for i, size in enumerate(bodies):
        name = names.get(imported + i, f"<function {imported + i}>")
        crate = crate_of(name)
        per_crate[crate] += size
        count[crate] += 1
        if crate != APP and APP in crates_in(name):
            for_app[crate] += size
        if focus and crate == focus:
            functions.append((size, name))
    code = sum(bodies)
    print(f"{path}: {len(buf)} bytes; code {code} in {len(bodies)} functions; data {data}")
    if focus:
        for size, name in sorted(functions, reverse=True)[:top]:
            print(f"{size:8} {name[:150]}")
        return
    print(f"{'crate':24} {'code bytes':>10} {'share':>6} {'functions':>9} {'for app types':>13}")
    for crate, size in per_crate.most_common(top):
        print(f"{crate:24} {size:10} {100 * size / code:5.1f}% {count[crate]:9} {for_app[crate]:13}")


if __name__ == "__main__":
    main()
