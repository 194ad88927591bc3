print("bk-fuzz: see scripts/fuzz")
