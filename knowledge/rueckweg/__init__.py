"""The return path (Rückweg, seed 004 §4b): what survived the promotion into long-term memory
goes into her knowledge files. Public: ``rueckweg_for_memory``, ``rueckweg_pending``."""

from knowledge.rueckweg.service import RueckwegResult, rueckweg_for_memory, rueckweg_pending

__all__ = ["RueckwegResult", "rueckweg_for_memory", "rueckweg_pending"]
