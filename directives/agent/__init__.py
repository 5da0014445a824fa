"""The directives agent: classify → validate → ask (gate) → execute (seed 000 §3–§7)."""
