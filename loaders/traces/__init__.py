"""Trace loaders: format parsers (SWF, Alibaba v2017/v2018), the shared finishing steps, the drop
report and :func:`~schedlab.loaders.traces.load.load_trace`, the cached entry point."""
