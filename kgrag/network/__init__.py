"""Knowledge networks: ontology model, SQL instance store with text/vector indexes, conditions, loaders."""
