"""Synthetic Chinese documents with exact ground truth: the training data the project can ship.

    from data.synth import generate, generate_dir, list_layouts
    image, gt = generate("vat_invoice", seed=1, layout="vat_paper_split", degrade="light")
    generate_dir("vat_invoice", n=100, seed=1, out_dir="out/", degrade="mix", workers=2)

CLI: python -m data.synth --type vat_invoice --n 100 --seed 1 --out DIR [--degrade mix] [--workers 2]
See data/synth/generator.py for the ground-truth format.
"""
from data.synth.generator import generate, generate_dir, list_doc_types, list_layouts, page_seed

__all__ = ["generate", "generate_dir", "list_doc_types", "list_layouts", "page_seed"]
