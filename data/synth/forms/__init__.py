"""Generic-form layouts and their labels; data/synth/form.py is the entry point."""
