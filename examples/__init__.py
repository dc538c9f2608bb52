"""Example models that ship with streameval.

They live inside the wheel because ``streameval demo`` imports them: everything here is
procedural and seeded, with no data files to install or download.
"""
