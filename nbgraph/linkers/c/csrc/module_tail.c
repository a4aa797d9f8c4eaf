/* The exported table of an nbgraph C module (see nbgraph.linkers.c). */
static const nbg_kernel nbg_table[] = { ${table} };
static const nbg_freefn nbg_frees[] = { ${frees} };
NBG_EXPORT NBG_LOAD_TIME int nbg_abi(void) { return ${abi}; }
NBG_EXPORT NBG_LOAD_TIME int nbg_nkernels(void) { return ${nkernels}; }
NBG_EXPORT NBG_LOAD_TIME nbg_kernel nbg_kernel_at(int k) { return nbg_table[k]; }
NBG_EXPORT NBG_LOAD_TIME int nbg_nfreefns(void) { return ${nfreefns}; }
NBG_EXPORT NBG_LOAD_TIME nbg_freefn nbg_freefn_at(int k) { return nbg_frees[k]; }
NBG_EXPORT NBG_LOAD_TIME int nbg_attach_runtime(const void *rt) {
    const nbg_runtime *r = (const nbg_runtime *)rt;
    if (r && r->version != NBG_RT_VERSION) return -1;
#ifndef NBG_STANDALONE
    if (!r) return -1;  /* its helpers are the runtime's */
#endif
    nbg_rt = r;
    ${attach_parts}
    return 0;
}
