"""The table kinds, one module each (machines and ceiling share one): each module declares `KINDS`, a tuple of
`definitions.TableKind` (name, order, builder, layout). They are found here by discovery, every module of this
package in name order, and registered with `definitions.register`, so adding a kind is one module (and its TOML
tables and tests), with no list to edit.

`tpsdb.publish` imports this package, so the kinds are registered before any definition is loaded or table built.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..definitions import register

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    for _kind in importlib.import_module(f"{__name__}.{_module.name}").KINDS:
        register(_kind)
