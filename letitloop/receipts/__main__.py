"""``python -m letitloop.receipts ...`` is ``lil receipt ...`` (the Action uses this form)."""

from __future__ import annotations

from letitloop.cli._receipt import receipt

if __name__ == "__main__":
    receipt.main(prog_name="lil receipt")
