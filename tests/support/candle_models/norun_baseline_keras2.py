"""A model module that forgot ``run``: the runner must refuse it clearly."""


def initialize_parameters(default_model=None):
    return {"model_name": "norun"}
