"""acceptgate cache info | clear [--all]

What acceptgate keeps between runs under its cache directory (``ACCEPTGATE_CACHE_DIR``, default
~/.cache/acceptgate), and clearing it (``acceptgate/pipelines/caches.py``).
"""

from __future__ import annotations

from acceptgate.pipelines import caches
from acceptgate._util.settings import settings


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="show or clear what acceptgate keeps between runs (the import cache, "
                                     "Prefect's home)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = actions.add_parser("info", help="the cache directory, each part's size and what it holds")
    info.set_defaults(func=run_info)
    clear = actions.add_parser("clear", help="remove the import cache (rebuilt by the next import)")
    clear.add_argument("--all", action="store_true",
                       help="also Prefect's home under the cache (the temporary server's flow-run history); "
                            "not while an acceptgate command runs")
    clear.set_defaults(func=run_clear)


def run_info(args) -> int:
    print(f"cache directory: {settings().cache_dir.expanduser()} (ACCEPTGATE_CACHE_DIR)")
    for part in caches.parts():
        size = f"{caches.human(part.bytes)} in {part.files} files" if part.files else "empty"
        print(f"  {part.name:<8} {size:<24} {part.path}: {part.what}")
    print("clear: 'acceptgate cache clear' (the import cache), 'acceptgate cache clear --all' (Prefect's home too)")
    return 0


def run_clear(args) -> int:
    names = {part.name for part in caches.parts()} if args.all else {"imports"}
    removed = caches.clear(names)
    for part in removed:
        print(f"removed {part.name}: {part.path} ({caches.human(part.bytes)})")
    if not removed:
        print("nothing to remove")
    return 0
