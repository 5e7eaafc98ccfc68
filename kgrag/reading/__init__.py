"""The project's one question reader: ``kgrag.reading.reader.read_question`` turns a question (English through
spaCy's small English pipeline, Chinese through jieba, a regex tokenizer when spaCy is missing or
``KGRAG_READER=regex``) into a frozen, JSON-able ``Reading`` (tokens, lemmas, noun chunks, the wh-phrase and
the noun it asks for, superlatives, comparatives, quoted strings), and
``kgrag.reading.numbers.find_quantities`` reads numbers as people write them (comparisons, scales, units,
years, dates) in pure Python; ``reader.lemma`` and ``reader.stem`` are the project's one home for word forms, with ``words.noun_stem`` /
``words.suffix_stems`` for the planners that match schema words without a full reading.
"""
