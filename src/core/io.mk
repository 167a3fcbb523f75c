# (filled by its module)
