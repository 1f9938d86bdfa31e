/*
   python_literal.swift: a Swift string, written as Python source.

   python_literal(s) is a double-quoted Python string literal whose value is exactly s, for any
   s. Backslashes are doubled first, so that the escapes added after them are not doubled
   again; then double quotes, line feeds and carriage returns are escaped: they are the only
   other characters that can end a "..." literal or change its value. Every other character,
   non-ASCII included, stands for itself (Python reads its source as UTF-8).

   EQPy.swift and emews_objective.swift build their Python code with it, so no payload can
   break out of the code it is pasted into (the classic EQPy_put pasted it between quotes).
*/

import string;

@pure
(string literal) python_literal(string s)
{
  literal = "\"" + replace_all(replace_all(replace_all(replace_all(s,
              "\\", "\\\\", 0), "\"", "\\\"", 0), "\n", "\\n", 0), "\r", "\\r", 0) + "\"";
}
