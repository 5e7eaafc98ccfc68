"""The web console's data: plain, JSON-ready views of the loaded networks and prepared KGs (:mod:`.data`)."""
