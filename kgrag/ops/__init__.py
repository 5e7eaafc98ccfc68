"""Operations: scheduled deployments of the offline flows."""
