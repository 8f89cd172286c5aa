"""The notebook view layer: live progress, tables, charts, reprs and magics.

Nothing here is imported by `import convlab`; model objects reach it through thin lazy
hooks (`Run._repr_mimebundle_`, `Run.table`, `Run.plot`, ...). plotly, ipywidgets, IPython
and itables are imported inside the functions that draw.
"""
