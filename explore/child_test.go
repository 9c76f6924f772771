package explore_test

func childMain(name string) int { return 2 }
