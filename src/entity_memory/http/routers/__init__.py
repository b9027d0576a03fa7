"""One router per area of the API; `http/app.py` includes them all."""
