"""The five Arbiter services; each folder has one composition root, `main.py`."""
