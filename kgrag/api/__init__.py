"""FastAPI app and routers."""
