/* The seed of FuzzOpen's corpus (see TestSeedCorpus): a function of each binding, an object, a TLS
   variable and a vtable-like table, in .dynsym and .symtab. */
int counter = 1;
static int hidden = 2;
__thread int tls;
const void *table[] = {&counter, &hidden};

__attribute__((noinline)) static int helper(int x) { return x * hidden; }
int exported(int x) { return helper(x) + counter + tls; }
__attribute__((weak)) int weak(void) { return 3; }
