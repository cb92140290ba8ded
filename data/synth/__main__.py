"""python -m data.synth: write synthetic pages (image + ground-truth JSON) and a manifest."""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures.process import BrokenProcessPool

from data.synth.degrade import LEVELS
from data.synth.generator import generate_dir, list_doc_types, list_layouts


def build_parser() -> argparse.ArgumentParser:
    types = list_doc_types()
    p = argparse.ArgumentParser(
        prog="python -m data.synth",
        description="Render synthetic Chinese documents with exact ground truth (every line's text and "
                    "box, every field's value and box). Writes DIR/<id>.jpg, DIR/<id>.json and "
                    "DIR/manifest.jsonl. The same --seed gives byte-identical output.",
        epilog="examples:\n"
               "  python -m data.synth --type vat_invoice --n 100 --seed 1 --out out/vat\n"
               "  python -m data.synth --type vat_invoice,e_invoice --n 1000 --degrade mix --workers 2 --out out/inv\n"
               "  python -m data.synth --type generic_form --layouts form_grid,form_above --n 50 --out out/forms\n"
               "  python -m data.synth --list   (document types and their layouts)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--type", default="vat_invoice",
                   help=f"document type, or several joined by commas (taken in turn): {', '.join(types)}")
    p.add_argument("--n", type=int, default=10, help="number of pages (default 10)")
    p.add_argument("--seed", type=int, default=0, help="base seed; page i uses a seed derived from it")
    p.add_argument("--out", help="output folder (created if missing)")
    p.add_argument("--degrade", default="none", choices=LEVELS,
                   help="photo/scan degradation: none, light (careful scan or photo), photo (quick phone "
                        "photo: tilt, shadow, blur, noise, JPEG), heavy (that photo at half to 0.85 the "
                        "resolution: small print illegible), or mix (none/light/heavy at random per page)")
    p.add_argument("--layouts", default="",
                   help="comma-separated layout names to use in turn (default: random per page); "
                        "see --list. Leave some out to hold whole layouts out of training.")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--quality", type=int, default=92, help="JPEG quality of the written images (default 92)")
    p.add_argument("--list", action="store_true", help="print document types and layouts, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for t in list_doc_types():
            print(f"{t}: {', '.join(list_layouts(t))}")
        return 0
    if not args.out:
        print("error: --out DIR is required (where to write the pages)", file=sys.stderr)
        return 2
    types = [t for t in args.type.split(",") if t]
    unknown = [t for t in types if t not in list_doc_types()]
    if unknown:
        print(f"error: unknown --type {', '.join(unknown)}; choose from {', '.join(list_doc_types())}",
              file=sys.stderr)
        return 2
    layouts = [x for x in args.layouts.split(",") if x] or None
    if args.n < 1:
        print("error: --n must be at least 1", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        rows = generate_dir(types if len(types) > 1 else types[0], args.n, args.seed, args.out,
                            degrade=args.degrade, layouts=layouts, workers=args.workers, quality=args.quality)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenProcessPool:
        print(f"error: a worker process died (out of memory?); no manifest was written. Run again, with fewer "
              f"--workers than {args.workers} if it recurs", file=sys.stderr)
        return 1
    took = time.perf_counter() - start
    print(f"wrote {len(rows)} pages to {args.out} in {took:.1f}s ({took / len(rows):.3f} s/page, "
          f"{args.workers} worker(s)); manifest: {args.out}/manifest.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
