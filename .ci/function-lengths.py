#!/usr/bin/env python3
"""Function lengths of Swift sources: every `func` and `init` whose body runs over --max lines.

A function's length is counted from the line of its `func`/`init` keyword to the line of its
closing brace, both included (doc comments and attributes above it do not count; a nested
function's lines count in its own length and in the function around it). Braces are matched
on the code only: comments (`//`, nested `/* */`) and string literals (plain, multi-line,
raw `#"..."#`) are blanked first, while the code inside an interpolation `\\( ... )` stays
code. Declarations without a body (protocol requirements) are skipped.

    .ci/function-lengths.py Sources/LadePipeline/Import Sources/LadePipeline/Seed
    .ci/function-lengths.py --max 60 --all Sources/LadePipeline/Import

Prints each offender as `file:line: name is N lines (max M)` and exits 1 when there is one;
exits 0 otherwise, 2 on bad arguments.
"""

import argparse
import os
import re
import sys

# Words that begin another declaration: met before a `{` at depth 0, they mean the
# declaration scanned has no body (a protocol requirement).
DECLARATION_WORDS = {
    "func", "init", "deinit", "subscript", "var", "let", "case", "typealias", "associatedtype",
    "struct", "class", "enum", "protocol", "extension", "actor", "static", "private", "public",
    "internal", "fileprivate", "package", "open", "final", "mutating", "nonmutating", "override",
    "convenience", "required", "import",
}


def mask(text):
    """The text with comments and string literals blanked (newlines kept), interpolations kept."""
    out = list(text)
    n = len(text)

    def blank(start, end):
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    def code(i, closing_paren):
        """Scans code from i; with closing_paren, stops after the `)` that ends an interpolation."""
        depth = 0
        while i < n:
            c = text[i]
            if c == "/" and text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end < 0 else end
                blank(i, end)
                i = end
            elif c == "/" and text.startswith("/*", i):
                i = block_comment(i)
            elif c == '"' or (c == "#" and re.match(r'#+"', text[i:i + 64])):
                i = string(i)
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                if closing_paren and depth == 0:
                    return i + 1
                depth -= 1
                i += 1
            else:
                i += 1
        return i

    def block_comment(i):
        start, level = i, 0
        while i < n:
            if text.startswith("/*", i):
                level += 1
                i += 2
            elif text.startswith("*/", i):
                level -= 1
                i += 2
                if level == 0:
                    break
            else:
                i += 1
        blank(start, i)
        return i

    def string(i):
        hashes = 0
        while text[i + hashes] == "#":
            hashes += 1
        j = i + hashes
        multiline = text.startswith('"""', j)
        quote = '"""' if multiline else '"'
        terminator = quote + "#" * hashes
        escape = "\\" + "#" * hashes
        j += len(quote)
        segment = i
        while j < n:
            if text.startswith(escape, j):
                k = j + len(escape)
                if k < n and text[k] == "(":
                    blank(segment, k + 1)
                    j = code(k + 1, closing_paren=True)
                    segment = j
                    continue
                j = k + 1
            elif text.startswith(terminator, j):
                j += len(terminator)
                break
            elif text[j] == "\n" and not multiline:
                break  # an unterminated literal: stop at the line's end
            else:
                j += 1
        blank(segment, j)
        return j

    code(0, closing_paren=False)
    return "".join(out)


DECLARATION = re.compile(r"(?<![\w.])(func\s+([^\s(<]+)|init[?!]?(?=\s*[(<]))")
WORD = re.compile(r"[A-Za-z_]\w*")


def functions(text):
    """(name, first line, last line) of every function or initializer with a body in `text`."""
    masked = mask(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", masked)]

    def line_of(offset):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    found = []
    for match in DECLARATION.finditer(masked):
        name = match.group(2) or "init"
        i, depth, body = match.end(), 0, None
        while i < len(masked):
            c = masked[i]
            if c in "([<":
                depth += 1
            elif c in ")]>":
                # `->` is no closing angle bracket.
                if not (c == ">" and masked[i - 1] == "-"):
                    depth -= 1
            elif c == "{" and depth <= 0:
                body = i
                break
            elif c == "}" and depth <= 0:
                break
            elif depth <= 0 and (c.isalpha() or c == "_"):
                word = WORD.match(masked, i).group(0)
                if word in DECLARATION_WORDS:
                    break
                i += len(word)
                continue
            i += 1
        if body is None:
            continue
        level, j = 0, body
        while j < len(masked):
            if masked[j] == "{":
                level += 1
            elif masked[j] == "}":
                level -= 1
                if level == 0:
                    break
            j += 1
        found.append((name, line_of(match.start()), line_of(j)))
    return found


def swift_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".swift"):
                        yield os.path.join(root, name)
        else:
            raise FileNotFoundError(path)


def main():
    parser = argparse.ArgumentParser(description="Swift functions longer than --max lines.")
    parser.add_argument("paths", nargs="+", help="Swift files or directories (searched recursively)")
    parser.add_argument("--max", type=int, default=80, help="the longest a function may be, in lines (default 80)")
    parser.add_argument("--all", action="store_true", help="print every function's length, not only the offenders")
    arguments = parser.parse_args()
    try:
        files = list(swift_files(arguments.paths))
    except FileNotFoundError as missing:
        print(f"function-lengths: no such file or directory: {missing}", file=sys.stderr)
        return 2
    offenders, count, longest = 0, 0, (0, "")
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for name, first, last in functions(text):
            length = last - first + 1
            count += 1
            if length > longest[0]:
                longest = (length, f"{path}:{first} {name}")
            if length > arguments.max:
                offenders += 1
                print(f"{path}:{first}: {name} is {length} lines (max {arguments.max})")
            elif arguments.all:
                print(f"{path}:{first}: {name} is {length} lines")
    summary = f"{count} functions in {len(files)} files; longest {longest[0]} lines ({longest[1]})" if count else f"no functions in {len(files)} files"
    print(f"function-lengths: {summary}; {offenders} over {arguments.max}", file=sys.stderr)
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
