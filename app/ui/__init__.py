"""The Streamlit upload UI. main.py is the script Streamlit runs (`streamlit run app/ui/main.py`, which
scripts/run.sh and `python -m app ui` (command.py) start); the rest is plain Python that the script and
the tests share: fields.py (tables and edits), words.py (check messages in Chinese), view.py (page
drawings, zoom), export.py (JSON, CSV, Excel), corrections.py (saving checked pages for training).
Importing the package loads none of them, so it does not import Streamlit.
"""
