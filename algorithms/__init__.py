"""Model-exploration algorithms shipped with emews (installed as ``emews.algorithms``).

Each is an ask/tell :class:`emews.plugin.Algorithm`, registered by name under the
``emews.algorithms`` entry point in ``setup.cfg``.
"""
