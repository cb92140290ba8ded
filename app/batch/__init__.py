"""`python -m app batch`: many documents in parallel into one JSON Lines file that a rerun resumes.

command.py is the subcommand (options, the run); inputs.py expands the IN arguments; worker.py reads
one document in a worker process; pool.py runs the local worker processes and ray_pool.py Ray actors
with the same interface; state.py is the results file (append-only, locked, resumable); csv_out.py
writes the CSV beside it. Importing the package loads none of them.
"""
